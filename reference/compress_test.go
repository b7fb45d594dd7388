package reference_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

type coded struct {
	status   int
	encoding string
	vary     string
	replayed bool
	body     []byte // as received
	decoded  []byte // gzip undone when the body says gzip
}

// codedEnv serves app behind Middleware behind Compress; its client never
// decodes by itself (Accept-Encoding is always set explicitly).
func codedEnv(t *testing.T, opts ...reference.Option) func(key, accept string) coded {
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	srv := httptest.NewServer(reference.Compress(reference.Middleware(store, opts...)(&app{})))
	tr := &http.Transport{}
	t.Cleanup(func() { tr.CloseIdleConnections(); srv.Close() })
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	return func(key, accept string) coded {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/things", strings.NewReader(body1))
		req.Header.Set("Authorization", "Bearer alice")
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Accept-Encoding", accept)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		c := coded{status: resp.StatusCode, encoding: resp.Header.Get("Content-Encoding"), vary: resp.Header.Get("Vary"),
			replayed: resp.Header.Get("Idempotent-Replayed") == "true", body: b, decoded: b}
		if c.encoding == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("Content-Encoding gzip, body not gzip: %v", err)
			}
			if c.decoded, err = io.ReadAll(zr); err != nil {
				t.Fatalf("gzip body: %v", err)
			}
		}
		return c
	}
}

// TestContentCodingOnReplay: a retry gets its answer in a coding it
// accepted, decoding to the original's bytes, in either direction; the
// replay-coded-body defect replays gzip to a retry that accepts identity.
func TestContentCodingOnReplay(t *testing.T) {
	post := codedEnv(t)
	for _, dir := range []struct{ key, first, retry string }{{`"c1"`, "gzip", "identity"}, {`"c2"`, "identity", "gzip"}} {
		a, b := post(dir.key, dir.first), post(dir.key, dir.retry)
		wantA, wantB := map[string]string{"gzip": "gzip", "identity": ""}[dir.first], map[string]string{"gzip": "gzip", "identity": ""}[dir.retry]
		if a.status != 201 || !b.replayed || a.encoding != wantA || b.encoding != wantB || !bytes.Equal(a.decoded, b.decoded) {
			t.Errorf("%s then %s: codings %q, %q (want %q, %q), replayed=%v, same decoded body=%v",
				dir.first, dir.retry, a.encoding, b.encoding, wantA, wantB, b.replayed, bytes.Equal(a.decoded, b.decoded))
		}
		if a.vary != "Accept-Encoding" || b.vary != "Accept-Encoding" {
			t.Errorf("Vary %q, %q: the representation depends on Accept-Encoding", a.vary, b.vary)
		}
	}

	bad := codedEnv(t, reference.WithDefects(reference.ReplayCodedBody))
	a, b := bad("\"d1\"", "gzip"), bad("\"d1\"", "identity")
	if a.encoding != "gzip" || !b.replayed || b.encoding != "gzip" {
		t.Errorf("replay-coded-body: first %q, identity retry %q replayed=%v; want gzip to a retry that refused it", a.encoding, b.encoding, b.replayed)
	}
	// The other way round the defect stores identity, which any retry accepts.
	a, b = bad("\"d2\"", "identity"), bad("\"d2\"", "gzip")
	if a.encoding != "" || !bytes.Equal(a.decoded, b.decoded) {
		t.Errorf("replay-coded-body, identity first: %q then %q", a.encoding, b.encoding)
	}
}

// TestCompressLeavesAlone: no coding without a body, for bodies that are
// not text or JSON, or for a response coded already.
func TestCompressLeavesAlone(t *testing.T) {
	h := reference.Compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/empty":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNoContent)
		case "/binary":
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write([]byte{0, 1, 2})
		case "/coded":
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", "br")
			_, _ = w.Write([]byte("x"))
		}
	}))
	for _, path := range []string{"/empty", "/binary", "/coded"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		h.ServeHTTP(rec, req)
		if enc := rec.Header().Get("Content-Encoding"); enc == "gzip" {
			t.Errorf("%s: coded gzip", path)
		}
	}
}

// TestCompressMediaTypes: text and JSON (any case, with parameters, +json
// suffixes) are coded and vary on Accept-Encoding, a Vary the handler set
// kept before it; other types are sent as they are.
func TestCompressMediaTypes(t *testing.T) {
	cases := []struct {
		contentType string
		coded       bool
	}{
		{"application/json", true},
		{"Application/JSON; charset=utf-8", true},
		{"application/problem+json", true},
		{"application/vnd.api+JSON ;x=1", true},
		{"text/plain;charset=utf-8", true},
		{" text/html", true},
		{"application/octet-stream", false},
		{"image/png", false},
		{"application/jsonx", false},
		{"", false},
	}
	for _, c := range cases {
		h := reference.Compress(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", c.contentType)
			w.Header().Set("Vary", "Origin")
			_, _ = w.Write([]byte(`{"a":1}`))
		}))
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		h.ServeHTTP(rec, req)
		coded := rec.Header().Get("Content-Encoding") == "gzip"
		vary := rec.Header().Values("Vary")
		wantVary := []string{"Origin"}
		if c.coded {
			wantVary = append(wantVary, "Accept-Encoding")
		}
		if coded != c.coded || !slices.Equal(vary, wantVary) {
			t.Errorf("Content-Type %q: coded %v, Vary %q; want coded %v, Vary %q", c.contentType, coded, vary, c.coded, wantVary)
		}
	}
}

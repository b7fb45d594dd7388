package load

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/wire"
)

// TestDirectSend: the direct send puts the target on the wire as built
// (its header fields and no others of ours, its body with its length,
// its query; the fragment never), and fills the result as vegeta's
// Attacker.hit would: status, the error of a non-2xx/3xx, the body cut at
// maxBody, the replay sums on the header. One target's header map is
// shared by concurrent sends and never written (run under -race).
func TestDirectSend(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		if r.URL.RawQuery != "a=1" || string(b) != `{"amount":1}` || r.ContentLength != int64(len(b)) {
			http.Error(w, "bad request: "+r.URL.RawQuery+" "+string(b), http.StatusBadRequest)
			return
		}
		if r.Header.Get("Idempotency-Key") == `"conflict"` {
			http.Error(w, `{"error":"in flight"}`, http.StatusConflict)
			return
		}
		_, _ = w.Write([]byte(`{"id":"ch_1","amount":1,"padding":"0123456789"}`))
	}))
	defer srv.Close()
	rt := wire.NewTransport(4)
	defer rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	d := &directHTTP{rt: rt, timeout: 5 * time.Second}
	sums := &replaySums{facts: &bodyFacts{}}
	hdr := http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {`"k1"`}}
	want := maps.Clone(hdr)
	tgt := vegeta.Target{Method: http.MethodPost, URL: srv.URL + "/v1/charges?a=1#path=hit&key=k1", Header: hdr, Body: []byte(`{"amount":1}`)}
	u, _, _ := strings.Cut(tgt.URL, "#")
	var wg sync.WaitGroup
	results := make([]vegeta.Result, 8)
	for i := range results {
		wg.Go(func() { d.send(&results[i], &tgt, u, sums, 10) })
	}
	wg.Wait()
	for i, r := range results {
		if r.Code != 200 || r.Error != "" || string(r.Body) != `{"id":"ch_` || r.BytesIn != 47 || r.BytesOut != 12 {
			t.Fatalf("result %d: code %d error %q body %q in %d out %d; want 200, the body cut at 10 bytes, 47 in, 12 out", i, r.Code, r.Error, r.Body, r.BytesIn, r.BytesOut)
		}
		if len(r.Headers[bodySumHeader]) != 1 || !strings.HasSuffix(r.Headers[bodySumHeader][0], " 47") {
			t.Fatalf("result %d: sums %q, want the whole body's (47 bytes)", i, r.Headers[bodySumHeader])
		}
	}
	if !maps.EqualFunc(hdr, want, func(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }) {
		t.Fatalf("the target's header was written: %v", hdr)
	}
	for _, h := range seen {
		for k := range h {
			switch k {
			case "Content-Type", "Idempotency-Key", "Content-Length", "User-Agent", "Accept-Encoding":
			default:
				t.Fatalf("sent a field the target does not have: %s: %q", k, h[k])
			}
		}
	}
	conflict := tgt
	conflict.Header = http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {`"conflict"`}}
	var r vegeta.Result
	d.send(&r, &conflict, u, sums, -1)
	if r.Code != 409 || r.Error != "409 Conflict" || !strings.Contains(string(r.Body), "in flight") {
		t.Fatalf("conflict: code %d error %q body %q; want 409, its status line, the whole body", r.Code, r.Error, r.Body)
	}
}

// TestDirectSendTimeout: an answer slower than the run's timeout ends the
// request, and the result says it timed out.
func TestDirectSendTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	rt := wire.NewTransport(1)
	defer rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	d := &directHTTP{rt: rt, timeout: 100 * time.Millisecond}
	tgt := vegeta.Target{Method: http.MethodGet, URL: srv.URL + "/"}
	var r vegeta.Result
	began := time.Now()
	d.send(&r, &tgt, tgt.URL, nil, 0)
	if r.Code != 0 || !strings.Contains(r.Error, "no answer within the 100ms timeout") || !strings.HasPrefix(r.Error, "Get ") {
		t.Fatalf("code %d error %q; want a transport error naming the timeout", r.Code, r.Error)
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("took %s for a 100 ms timeout", took)
	}
}

// TestDirectSendHost: a Host field in the target's header is the
// request's Host, as vegeta's Target.Request makes it.
func TestDirectSendHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.Host))
	}))
	defer srv.Close()
	rt := wire.NewTransport(1)
	defer rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	d := &directHTTP{rt: rt, timeout: 5 * time.Second}
	tgt := vegeta.Target{Method: http.MethodGet, URL: srv.URL + "/", Header: http.Header{"Host": {"api.example.test"}}}
	var r vegeta.Result
	d.send(&r, &tgt, tgt.URL, nil, -1)
	if r.Code != 200 || string(r.Body) != "api.example.test" {
		t.Fatalf("code %d body %q error %q; want the Host field as the request's host", r.Code, r.Body, r.Error)
	}
}

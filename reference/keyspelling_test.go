package reference_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/rawspelling"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// TestKeyFieldSpelling: the key field is one field under any spelling of
// its name; the exact-key-spelling defect honours only Idempotency-Key,
// which it can tell over HTTP/1.1 only behind KeepFieldSpelling.
func TestKeyFieldSpelling(t *testing.T) {
	cases := []struct {
		name       string
		defect     bool
		keep       bool // the server keeps field names as sent
		executions int64
	}{
		{"correct", false, true, 1},
		{"defect", true, true, 2},
		{"defect-spelling-unknown", true, false, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := memstore.New()
			defer store.Close()
			var opts []reference.Option
			if c.defect {
				opts = append(opts, reference.WithDefects(reference.ExactKeySpelling))
			}
			a := &app{}
			srv := httptest.NewUnstartedServer(reference.Middleware(store, opts...)(a))
			if c.keep {
				srv.Listener = reference.KeepFieldSpelling(srv.Config, srv.Listener)
			}
			srv.Start()
			defer srv.Close()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
			send := func(name, key string) (int, bool) {
				t.Helper()
				req, _ := http.NewRequest("POST", srv.URL+"/things", strings.NewReader(body1))
				req.Header.Set("Authorization", "Bearer alice")
				rawspelling.SetVerbatim(req.Header, name, key)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true"
			}
			first, _ := send("idempotency-key", `"s1"`)
			retry, replayed := send("IDEMPOTENCY-KEY", `"s1"`)
			if n := a.executions.Load(); first != 201 || retry != 201 || n != c.executions || replayed != (c.executions == 1) {
				t.Fatalf("idempotency-key -> %d, IDEMPOTENCY-KEY -> %d replayed=%v, %d executions; want %d", first, retry, replayed, n, c.executions)
			}
			before := a.executions.Load()
			send("Idempotency-Key", `"s2"`)
			if _, replayed := send("Idempotency-Key", `"s2"`); !replayed || a.executions.Load() != before+1 {
				t.Fatalf("the exact spelling is honoured by every build: replayed=%v", replayed)
			}
		})
	}
}

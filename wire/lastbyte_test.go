package wire

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// TestLastByteHTTP2: a burst is synchronised over HTTP/2 on as many
// connections as the server's settings need (an h2 server allowing 4
// concurrent streams takes 10 requests on 3), and over h2c with prior
// knowledge where the target speaks HTTP/2 only; a target speaking HTTP/2
// only whose TLS does not negotiate h2 gets no burst, and why.
func TestLastByteHTTP2(t *testing.T) {
	var h1 atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.ProtoMajor != 2 {
			h1.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
	})
	h2 := httptest.NewUnstartedServer(handler)
	h2.EnableHTTP2 = true
	h2.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 4}
	h2.StartTLS()
	defer h2.Close()
	h2c := httptest.NewUnstartedServer(handler)
	h2c.Config.Protocols = new(http.Protocols)
	h2c.Config.Protocols.SetUnencryptedHTTP2(true)
	h2c.Start()
	defer h2c.Close()
	h1only := httptest.NewTLSServer(handler) // no h2 by ALPN
	defer h1only.Close()
	for _, tc := range []struct {
		name, base string
		http2      bool
		how        string // "": no burst, why says so
	}{
		{"h2 split over connections", h2.URL, false, "over HTTP/2: every stream's final DATA frame in one write per connection (3 connection(s))"},
		{"h2c, HTTP/2 only", h2c.URL, true, "over HTTP/2: every stream's final DATA frame in one write per connection (1 connection(s))"},
		{"https without h2, HTTP/2 only", h1only.URL, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := &apispec.Target{BaseURL: tc.base, HTTP2: tc.http2}
			if err := tg.SetTLS(apispec.TLS{InsecureSkipVerify: true}); err != nil {
				t.Fatal(err)
			}
			xs := make([]Exchange, 10)
			bases := make([]string, len(xs))
			for i := range xs {
				xs[i] = Exchange{Request: ExchangeRequest{Method: http.MethodPost, URL: tc.base + "/v1/charges", Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"a":1}`)}}
				bases[i] = tc.base
			}
			h1.Store(0)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rs, _, how, ok, why := LastByte{Target: tg, Timeout: 10 * time.Second}.Send(ctx, xs, bases)
			if tc.how == "" {
				if ok || !strings.Contains(why, "HTTP/2 cannot carry it") {
					t.Errorf("ok %v, why %q: want no burst, and why", ok, why)
				}
				return
			}
			if !ok || !strings.Contains(how, tc.how) {
				t.Fatalf("ok %v, how %q, why %q: want %q", ok, how, why, tc.how)
			}
			for i, r := range rs {
				if r.Err != nil || r.Status != http.StatusCreated {
					t.Errorf("request %d: %s", i+1, r.String())
				}
			}
			if n := h1.Load(); n != 0 {
				t.Errorf("%d requests over HTTP/1.1", n)
			}
		})
	}
}

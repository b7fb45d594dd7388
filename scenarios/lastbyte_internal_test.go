package scenarios

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// TestLastByteFallsBack: where last-byte sync cannot work the burst falls
// back to the barrier and says why; nothing is sent twice.
func TestLastByteFallsBack(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	// A port nothing listens on: every connection is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	p, err := apispec.ProfileByName("ietf")
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		name, base string
		body       []byte
		want       string
		answered   bool
	}{
		{"empty body", srv.URL, nil, "released by a barrier (last-byte sync not possible: the body is empty", true},
		{"unreachable", closed, []byte(`{"a":1}`), "released by a barrier (last-byte sync not possible: opening its connections", false},
		{"works", srv.URL, []byte(`{"a":1}`), "last-byte sync over HTTP/1.1", true},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			client := wire.NewClient(5 * time.Second)
			defer client.CloseIdleConnections()
			op := &apispec.Operation{Name: "op", Method: http.MethodPost, Path: "/", Body: row.body}
			tg := &apispec.Target{BaseURL: row.base, KeyHeader: "Idempotency-Key", KeySyntax: apispec.Raw}
			e := &Env{Target: tg, Profile: p, Op: op, carrier: wire.HTTP{Target: tg, Client: client}, timeout: client.Timeout}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			b := e.newBurster(4)
			defer b.close()
			rs, how := b.send(ctx, "k", row.body, "burst")
			if !strings.HasPrefix(how, row.want) {
				t.Errorf("how = %q, want it to start with %q", how, row.want)
			}
			for _, r := range rs {
				if answered := r.Err == nil && r.Status == http.StatusCreated; answered != row.answered {
					t.Errorf("answer %s, want answered=%v", r.String(), row.answered)
				}
			}
			if n := len(e.Exchanges()); n != 4 {
				t.Errorf("%d exchanges recorded, want the burst's 4", n)
			}
		})
	}
}

package scenarios_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// resultExpired makes the reference behave like Echo: a key keeps its
// place after its result is dropped, and a retry past the TTL (counted
// from completion) gets 409 "result expired" instead of a new execution.
func resultExpired(next http.Handler, ttl time.Duration) http.Handler {
	var mu sync.Mutex
	done := map[string]time.Time{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("Idempotency-Key")
		if r.Method != http.MethodPost || k == "" {
			next.ServeHTTP(w, r)
			return
		}
		id := r.Header.Get("Authorization") + " " + r.URL.Path + " " + k
		mu.Lock()
		at, seen := done[id]
		mu.Unlock()
		if seen && time.Since(at) > ttl {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"type":"https://example.test/problems/operation-result-expired","title":"Result expired","status":409}`))
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		if rec.Code < 300 && rec.Header().Get("Idempotent-Replayed") == "" {
			mu.Lock()
			done[id] = time.Now()
			mu.Unlock()
		}
		for h, v := range rec.Header() {
			w.Header()[h] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

func TestExpiryModes(t *testing.T) {
	rows := []struct {
		name    string
		expired bool // serve through resultExpired
		mode    string
		want    map[string]scenarios.Status
	}{
		{"Echo-style server, profile expired-409", true, apispec.ExpiryExpired409,
			map[string]scenarios.Status{"expiry/fresh-after-ttl": scenarios.Pass, "expiry/replays-before-ttl": scenarios.Pass}},
		{"Echo-style server, profile fresh", true, apispec.ExpiryFresh,
			map[string]scenarios.Status{"expiry/fresh-after-ttl": scenarios.Warn, "expiry/replays-before-ttl": scenarios.Pass}},
		{"fresh server, profile expired-409", false, apispec.ExpiryExpired409,
			map[string]scenarios.Status{"expiry/fresh-after-ttl": scenarios.Warn, "expiry/replays-before-ttl": scenarios.Pass}},
		{"fresh server, profile unknown", false, apispec.ExpiryUnknown,
			map[string]scenarios.Status{"expiry/fresh-after-ttl": scenarios.Skip, "expiry/replays-before-ttl": scenarios.Pass}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			app, err := demo.New(demo.Options{TTL: demoTTL, Lease: demoLease})
			if err != nil {
				t.Fatal(err)
			}
			var h http.Handler = app
			if row.expired {
				h = resultExpired(app, demoTTL)
			}
			srv := httptest.NewServer(h)
			defer func() { srv.Close(); app.Close() }()
			tg, err := apispec.FromURL(srv.URL, demoTTL, demoLease)
			if err != nil {
				t.Fatal(err)
			}
			p := ietf(t)
			p.Expiry = row.mode
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"expiry/fresh-after-ttl", "expiry/replays-before-ttl"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 4 {
				t.Fatalf("%d results, want 4", len(rep.Results))
			}
			for _, r := range rep.Results {
				if want := row.want[r.ID]; r.Status != want {
					t.Errorf("%s: %s, want %s (expected %q, observed %q %s)", r.Name(), r.Status, want, r.Expected, r.Observed, r.Reason)
				}
			}
		})
	}
}

// TestExpiryLongTTLSkips: a declared production TTL (24 h) is not waited
// for; the expiry cases skip and say why.
func TestExpiryLongTTLSkips(t *testing.T) {
	tg := startDemo(t)
	tg.TTL = 24 * time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"expiry/**"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 10 {
		t.Fatalf("%d results, want 10 (5 expiry cases x 2 operations)", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Status != scenarios.Skip || !strings.Contains(r.Reason, "short TTL") {
			t.Errorf("%s: %s %s, want a skip naming the short-TTL deployment", r.Name(), r.Status, r.Reason)
		}
	}
}

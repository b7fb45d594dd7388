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

// keyBugs wraps the reference with bugs its defect catalog lacks: a store
// looked up with LIKE/glob patterns, a key layer that crashes on '%', and
// an idempotency layer that runs before authentication, and no
// authentication at all.
type keyBugs struct {
	next http.Handler
	mode string

	mu   sync.Mutex
	keys map[string]string // key -> Authorization of its first request
}

func (b *keyBugs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := strings.Trim(r.Header.Get("Idempotency-Key"), `"`)
	if r.Method != http.MethodPost || k == "" {
		b.next.ServeHTTP(w, r)
		return
	}
	b.mu.Lock()
	switch b.mode {
	case "crash-on-percent":
		if strings.Contains(k, "%") {
			b.mu.Unlock()
			http.Error(w, "syntax error at or near \"%\"", http.StatusInternalServerError)
			return
		}
	case "wildcard-lookup":
		if p, ok := strings.CutSuffix(strings.TrimSuffix(k, "*"), "%"); ok || p != k {
			for stored := range b.keys {
				if strings.HasPrefix(stored, p) {
					r.Header.Set("Idempotency-Key", `"`+stored+`"`)
					break
				}
			}
		}
	case "no-auth": // an API without authentication: every caller is one user
		if r.Header.Get("Authorization") == "" {
			r.Header.Set("Authorization", "Bearer alice")
		}
	case "key-before-auth":
		if owner, ok := b.keys[k]; ok && r.Header.Get("Authorization") == "" {
			r.Header.Set("Authorization", owner)
		}
	}
	if _, seen := b.keys[k]; !seen && r.Header.Get("Authorization") != "" {
		b.keys[k] = r.Header.Get("Authorization")
	}
	b.mu.Unlock()
	b.next.ServeHTTP(w, r)
}

func TestSecurityBugs(t *testing.T) {
	rows := []struct {
		mode string
		want map[string]scenarios.Status
	}{
		{"crash-on-percent", map[string]scenarios.Status{"security/hostile-keys": scenarios.Fail, "security/unauthenticated-known-key": scenarios.Pass}},
		{"wildcard-lookup", map[string]scenarios.Status{"security/hostile-keys": scenarios.Fail, "security/unauthenticated-known-key": scenarios.Pass}},
		{"key-before-auth", map[string]scenarios.Status{"security/hostile-keys": scenarios.Pass, "security/unauthenticated-known-key": scenarios.Fail}},
		// Answers without credentials: skipped before anything else (the
		// same-key replay to an anonymous caller is its ordinary behaviour;
		// it failed here).
		{"no-auth", map[string]scenarios.Status{"security/hostile-keys": scenarios.Pass, "security/unauthenticated-known-key": scenarios.Skip}},
	}
	for _, row := range rows {
		t.Run(row.mode, func(t *testing.T) {
			t.Parallel()
			app, err := demo.New(demo.Options{TTL: demoTTL, Lease: demoLease})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(&keyBugs{next: app, mode: row.mode, keys: map[string]string{}})
			defer func() { srv.Close(); app.Close() }()
			tg, err := apispec.FromURL(srv.URL, demoTTL, demoLease)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"security/hostile-keys", "security/unauthenticated-known-key"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 4 {
				t.Fatalf("%d results, want 4", len(rep.Results))
			}
			for _, r := range rep.Results {
				if want := row.want[r.ID]; r.Status != want {
					t.Errorf("%s: %s, want %s: expected %q, observed %q %s", r.Name(), r.Status, want, r.Expected, r.Observed, r.Reason)
				}
			}
		})
	}
}

package variants

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// lateClaim delays the first request under each key by delay before the
// server sees it: a stalled server claims the slow original late, so a
// duplicate the client sends at +1.2 s reaches it only 0.8 s into the
// original's run.
func lateClaim(next http.Handler, delay time.Duration) http.Handler {
	var mu sync.Mutex
	seen := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := r.Header.Get("Idempotency-Key"); k != "" && r.Method == http.MethodPost {
			mu.Lock()
			first := !seen[k]
			seen[k] = true
			mu.Unlock()
			if first {
				time.Sleep(delay)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// TestLockLapsesLateClaim: the lock-lapses variant (its in-flight lock
// lapses 1 s into a 1.5 s run) behind a server that claims the original
// 400 ms late, as a loaded machine does. The duplicates then meet the lock
// before it lapses and get 409; concurrent/in-flight-offsets passed the
// broken server that way ("a broken server's run passed"). A duplicate not
// shown to reach the server at its offset is a missed overlap: retried
// later, never a pass.
func TestLockLapsesLateClaim(t *testing.T) {
	tg, profile, err := apispec.LoadConfig(filepath.Join("testdata", "core.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(lateClaim(New(Choices{LockLapse: time.Second, TTL: tg.TTL}), 400*time.Millisecond))
	defer srv.Close()
	tg.BaseURL = srv.URL
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, profile, scenarios.RunOptions{Run: []string{"concurrent/in-flight-offsets@charges"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 {
		t.Fatalf("%d results, want 1", len(rep.Results))
	}
	switch r := rep.Results[0]; r.Status {
	case scenarios.Fail:
	case scenarios.Inconclusive:
		t.Logf("%s: inconclusive (a stall on this machine): %s", r.Name(), r.Reason)
	default:
		t.Errorf("%s: %s against a lock that lapses: %s %s", r.Name(), r.Status, r.Observed, r.Reason)
	}
}

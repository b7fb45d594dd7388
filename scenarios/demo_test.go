package scenarios_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestMain fails the package if a test leaves goroutines behind: servers,
// run clients and burst clients must all be closed. It also stops the
// shared databases the SQL oracle tests started.
func TestMain(m *testing.M) { testenv.Main(m) }

// Reference deployment knobs shared by the engine's tests: a short TTL so
// the expiry cases finish quickly, yet 3.5 s longer than the slow variant
// (the TTL counts from the claim, and the concurrent and lost cases expect
// a replay right after a slow original completes, also on a loaded
// machine: at 3 s, stalls of 1–2 s on the shared 2-core machine let quick
// retries reach the server after the record expired, which the cases then
// rightly call inconclusive); a lease longer than the slow variant.
const (
	demoTTL   = 5 * time.Second
	demoLease = 5 * time.Second
)

// startDemo serves the reference app (with defects) on loopback and returns
// its Target.
func startDemo(t testing.TB, defects ...string) *apispec.Target {
	t.Helper()
	return startDemoTTL(t, demoTTL, defects...)
}

// startDemoTTL is startDemo with its own TTL.
func startDemoTTL(t testing.TB, ttl time.Duration, defects ...string) *apispec.Target {
	t.Helper()
	app, err := demo.New(demo.Options{TTL: ttl, Lease: demoLease, Defects: defects})
	if err != nil {
		t.Fatalf("demo.New(%v): %v", defects, err)
	}
	srv := httptest.NewUnstartedServer(app)
	if slices.Contains(defects, string(reference.ExactKeySpelling)) {
		// The defect needs field names as sent, read from the bytes (as
		// idemcheck serve does for it).
		srv.Listener = reference.KeepFieldSpelling(srv.Config, srv.Listener)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		app.Close()
	})
	tg, err := apispec.FromURL(srv.URL, ttl, demoLease)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// runCatalog runs the whole catalog against tg under profile p. It
// reports an error rather than failing the test, so that runs can go in
// goroutines (see concurrently).
func runCatalog(tg *apispec.Target, p *apispec.Profile, strict bool) (*scenarios.Report, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	return scenarios.Run(ctx, tg, p, scenarios.RunOptions{Strict: strict})
}

// concurrently calls f(i) for every i < n, at most limit at a time, and
// waits for all. Catalog runs mostly wait (slow variants, TTLs), so they
// run in plain goroutines: parallel subtests are capped at GOMAXPROCS,
// 2 on CI.
func concurrently(n, limit int, f func(i int)) {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}

func ietf(t testing.TB) *apispec.Profile {
	t.Helper()
	p, err := apispec.ProfileByName("ietf")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

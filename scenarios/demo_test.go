package scenarios_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestMain fails the package if a test leaves goroutines behind: servers,
// run clients and burst clients must all be closed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Reference deployment knobs shared by the engine's tests: a short TTL so
// the expiry cases finish quickly, yet 1.5 s longer than the slow variant
// (the TTL counts from the claim, and the concurrent and lost cases expect
// a replay right after a slow original completes, also on a loaded
// machine); a lease longer than the slow variant.
const (
	demoTTL   = 3 * time.Second
	demoLease = 5 * time.Second
)

// startDemo serves the reference app (with defects) on loopback and returns
// its Target.
func startDemo(t testing.TB, defects ...string) *scenarios.Target {
	t.Helper()
	return startDemoTTL(t, demoTTL, defects...)
}

// startDemoTTL is startDemo with its own TTL.
func startDemoTTL(t testing.TB, ttl time.Duration, defects ...string) *scenarios.Target {
	t.Helper()
	app, err := demo.New(demo.Options{TTL: ttl, Lease: demoLease, Defects: defects})
	if err != nil {
		t.Fatalf("demo.New(%v): %v", defects, err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(func() {
		srv.Close()
		app.Close()
	})
	tg, err := scenarios.FromURL(srv.URL, ttl, demoLease)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// runCatalog runs the whole catalog against tg under profile p.
func runCatalog(t testing.TB, tg *scenarios.Target, p *scenarios.Profile, strict bool) *scenarios.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Strict: strict})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

func ietf(t testing.TB) *scenarios.Profile {
	t.Helper()
	p, err := scenarios.ProfileByName("ietf")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

package storetest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/memstore"
	"github.com/idemcheck/idemcheck/reference/pgstore"
	"github.com/idemcheck/idemcheck/reference/redisstore"
	"github.com/idemcheck/idemcheck/reference/storetest"
	"github.com/idemcheck/idemcheck/scenarios"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// backend opens one store kind with the ledger serve would pair it with.
type backend struct {
	name string
	open func(t testing.TB) (reference.Store, demo.Ledger)
}

var backends = []backend{
	{"memory", func(t testing.TB) (reference.Store, demo.Ledger) {
		s := memstore.New()
		t.Cleanup(func() { _ = s.Close() })
		return s, demo.NewMemoryLedger()
	}},
	{"postgres", func(t testing.TB) (reference.Store, demo.Ledger) {
		dsn := testenv.RequirePostgres(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		s, err := pgstore.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s, pgstore.NewLedger(s)
	}},
	{"redis", func(t testing.TB) (reference.Store, demo.Ledger) {
		url := testenv.RequireRedis(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := redisstore.Open(ctx, url, redisstore.WithPrefix(testenv.KeyPrefix(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s, demo.NewMemoryLedger()
	}},
}

// The memory store meets the contract (PostgreSQL and Redis run it in
// their own packages).
func TestMemstore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) reference.Store {
		s, _ := backends[0].open(t)
		return s
	})
}

// serveDemo runs the demo app on a store over loopback HTTP.
func serveDemo(t testing.TB, b backend, ttl, lease time.Duration) string {
	t.Helper()
	s, l := b.open(t)
	app, err := demo.New(demo.Options{Store: s, Ledger: l, TTL: ttl, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(func() { srv.Close(); _ = app.Close() })
	return srv.URL
}

// The demo app behaves the same on every store: a create, its byte-identical
// replay, a 422 on a changed body, and the created charge readable back.
func TestDemoOnEachStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			base := serveDemo(t, b, time.Hour, 30*time.Second)
			k := uuid.NewString()
			const body = `{"amount":1200,"currency":"eur","description":"smoke"}`
			first, err := testenv.Post(base, "/v1/charges", "alice", k, body)
			if err != nil || first.Status != http.StatusCreated || first.Replayed() {
				t.Fatalf("create: %+v %v", first, err)
			}
			again, err := testenv.Post(base, "/v1/charges", "alice", k, body)
			if err != nil || again.Status != http.StatusCreated || !again.Replayed() || again.Body != first.Body ||
				again.Header.Get("Location") != first.Header.Get("Location") {
				t.Fatalf("replay: %+v %v; want the first response %q replayed", again, err, first.Body)
			}
			mm, err := testenv.Post(base, "/v1/charges", "alice", k, strings.Replace(body, "1200", "1201", 1))
			if err != nil || mm.Status != http.StatusUnprocessableEntity || mm.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("mismatch: %+v %v; want 422 problem", mm, err)
			}
			req, _ := http.NewRequest(http.MethodGet, base+first.Header.Get("Location"), nil)
			req.Header.Set("Authorization", "Bearer alice")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s = %d, want the created charge", first.Header.Get("Location"), resp.StatusCode)
			}
		})
	}
}

// The full conformance catalog gives the same verdict per case on
// PostgreSQL and Redis as on the memory store. An inconclusive verdict
// (the case could not create the overlap it needs) decides nothing, so it
// is reported, not compared; every decided verdict must match.
func TestConformanceSameOnEachStore(t *testing.T) {
	const ttl, lease = 2 * time.Second, 5 * time.Second
	p, err := scenarios.ProfileByName("ietf")
	if err != nil {
		t.Fatal(err)
	}
	verdicts := make([]map[string]scenarios.Result, len(backends))
	t.Run("catalog", func(t *testing.T) {
		for i, b := range backends {
			t.Run(b.name, func(t *testing.T) {
				t.Parallel()
				tg, err := scenarios.FromURL(serveDemo(t, b, ttl, lease), ttl, lease)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{})
				if err != nil {
					t.Fatal(err)
				}
				v := map[string]scenarios.Result{}
				for _, r := range rep.Results {
					v[r.Name()] = r
				}
				verdicts[i] = v
			})
		}
	})
	if verdicts[0] == nil || len(verdicts[0]) == 0 {
		t.Fatal("the memory store's run produced no results")
	}
	var names []string
	for n := range verdicts[0] {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, b := range backends[1:] {
		got := verdicts[i+1]
		if got == nil {
			continue // skipped or failed above
		}
		var diffs []string
		for _, n := range names {
			mem, other := verdicts[0][n], got[n]
			switch {
			case mem.Status == scenarios.Inconclusive || other.Status == scenarios.Inconclusive:
				t.Logf("%s: memory %s, %s %s (inconclusive, not compared: %s%s)", n, mem.Status, b.name, other.Status, mem.Reason, other.Reason)
			case mem.Status != other.Status:
				diffs = append(diffs, fmt.Sprintf("%s: memory %s, %s %s %s", n, mem.Status, b.name, other.Status, other.Reason))
			}
		}
		if len(got) != len(names) {
			diffs = append(diffs, fmt.Sprintf("%d results on %s, %d on memory", len(got), b.name, len(names)))
		}
		if len(diffs) > 0 {
			t.Errorf("%s differs from the memory store:\n%s", b.name, strings.Join(diffs, "\n"))
		}
	}
	counts := map[scenarios.Status]int{}
	for _, r := range verdicts[0] {
		counts[r.Status]++
	}
	t.Logf("%d case instances compared across %d stores; memory verdicts: %v", len(names), len(backends), counts)
}

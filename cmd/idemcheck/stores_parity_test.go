package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// parityStores are compared against the first, the memory store.
var parityStores = []string{"memory", "postgres", "redis"}

// serveOnStore serves the demo app on store kind over loopback HTTP; the
// external servers come from internal/testenv (skipped, or failed under
// IDEMCHECK_REQUIRE_STORES=1, when unavailable).
func serveOnStore(t *testing.T, kind string, ttl, lease time.Duration) string {
	t.Helper()
	var f storeFlags
	switch kind {
	case "postgres":
		f.DSN = testenv.RequirePostgres(t)
	case "redis":
		f.RedisURL = testenv.RequireRedis(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, l, closeStore, err := openStore(ctx, kind, &f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeStore() })
	return demotest.Serve(t, demo.Options{Store: s, Ledger: l, TTL: ttl, Lease: lease})
}

// TestConformanceSameOnEachStore: the full conformance catalog gives the
// same verdict per case on PostgreSQL and Redis as on the memory store,
// each opened and paired with its ledger as `idemcheck serve --store`
// does (openStore), served in-process over loopback. An inconclusive verdict
// (the case could not create the overlap it needs) decides nothing, so it
// is reported, not compared; every decided verdict must match.
func TestConformanceSameOnEachStore(t *testing.T) {
	const ttl, lease = 2 * time.Second, 5 * time.Second
	p, err := apispec.ProfileByName("ietf")
	if err != nil {
		t.Fatal(err)
	}
	verdicts := make([]map[string]scenarios.Result, len(parityStores))
	t.Run("catalog", func(t *testing.T) {
		for i, b := range parityStores {
			t.Run(b, func(t *testing.T) {
				t.Parallel()
				tg, err := apispec.FromURL(serveOnStore(t, b, ttl, lease), ttl, lease)
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
	for i, b := range parityStores[1:] {
		got := verdicts[i+1]
		if got == nil {
			continue // skipped or failed above
		}
		var diffs []string
		for _, n := range names {
			mem, other := verdicts[0][n], got[n]
			switch {
			case mem.Status == scenarios.Inconclusive || other.Status == scenarios.Inconclusive:
				t.Logf("%s: memory %s, %s %s (inconclusive, not compared: %s%s)", n, mem.Status, b, other.Status, mem.Reason, other.Reason)
			case mem.Status != other.Status:
				diffs = append(diffs, fmt.Sprintf("%s: memory %s, %s %s %s", n, mem.Status, b, other.Status, other.Reason))
			}
		}
		if len(got) != len(names) {
			diffs = append(diffs, fmt.Sprintf("%d results on %s, %d on memory", len(got), b, len(names)))
		}
		if len(diffs) > 0 {
			t.Errorf("%s differs from the memory store:\n%s", b, strings.Join(diffs, "\n"))
		}
	}
	counts := map[scenarios.Status]int{}
	for _, r := range verdicts[0] {
		counts[r.Status]++
	}
	t.Logf("%d case instances compared across %d stores; memory verdicts: %v", len(names), len(parityStores), counts)
}

package scenarios_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
)

// Flake guard (trap C13): a conformance verdict must not depend on timing.
// flakeRuns full-catalog runs against the reference must agree on every
// verdict. They run flakeServers at a time, each server serving its share
// in turn: the package stays fast, and the extra load is what makes a
// timing dependence show. (Plain goroutines, not parallel subtests: those
// are capped at GOMAXPROCS, 2 on CI.) The servers keep records for
// flakeTTL: with the short test TTL a stall of a few seconds on a loaded
// machine lets a record expire, and the server then rightly executes a
// retry again, which is not the engine flapping. The expiry cases skip
// such a TTL; TestReferencePassesEveryCase and the defect matrix judge
// them.
const (
	flakeRuns    = 20
	flakeServers = 4
	flakeTTL     = time.Hour
)

func TestFlakeGuard(t *testing.T) {
	p := referenceProfile(t)
	runs := make([]map[string]scenarios.Result, flakeRuns)
	errs := make([]error, flakeRuns)
	var wg sync.WaitGroup
	for s := range flakeServers {
		tg := startDemoTTL(t, flakeTTL)
		wg.Go(func() {
			for i := s; i < flakeRuns; i += flakeServers {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Strict: true})
				cancel()
				if err != nil {
					errs[i] = err
					continue
				}
				runs[i] = map[string]scenarios.Result{}
				for _, r := range rep.Results {
					runs[i][r.Name()] = r
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	for i := 1; i < flakeRuns; i++ {
		if len(runs[i]) != len(runs[0]) {
			t.Errorf("run %d: %d results, run 1 had %d", i+1, len(runs[i]), len(runs[0]))
		}
		for name, r := range runs[i] {
			first, ok := runs[0][name]
			switch {
			case !ok:
				t.Errorf("run %d: %s is not in run 1", i+1, name)
			case first.Status != r.Status:
				t.Errorf("run %d: %s changed from %s (%s %s) to %s (%s %s)", i+1, name,
					first.Status, first.Observed, first.Reason, r.Status, r.Observed, r.Reason)
			}
		}
	}
}

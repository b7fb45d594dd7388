package scenarios_test

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
)

// Flake guard (trap C13): a conformance verdict must not depend on timing.
// flakeRuns full-catalog runs against the reference, each against its own
// server, must agree on every verdict. They run flakeParallel at a time:
// the package stays fast, and the extra load is what makes a timing
// dependence show. The servers keep records for flakeTTL: short enough
// that the expiry cases run (they skip when TTL + grace exceeds 2 min),
// long enough that a stall of a few seconds on a loaded machine does not
// let a record expire before a retry the catalog expects to replay. The
// lease (demoLease) outlasts the slow variant, so no in-flight claim runs
// out mid-request.
const (
	flakeRuns     = 20
	flakeParallel = 10
	flakeTTL      = 6 * time.Second
)

func TestFlakeGuard(t *testing.T) {
	p := referenceProfile(t)
	targets := make([]*scenarios.Target, flakeRuns)
	for i := range targets {
		targets[i] = startDemoTTL(t, flakeTTL)
	}
	runs := make([]map[string]scenarios.Result, flakeRuns)
	errs := make([]error, flakeRuns)
	concurrently(flakeRuns, flakeParallel, func(i int) {
		rep, err := runCatalog(targets[i], p, true)
		if err != nil {
			errs[i] = err
			return
		}
		runs[i] = map[string]scenarios.Result{}
		for _, r := range rep.Results {
			runs[i][r.Name()] = r
		}
	})
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
	for name, r := range runs[0] {
		if r.Family == "expiry" && r.Status == scenarios.Skip {
			t.Errorf("%s skipped (%s): the guard must cover the expiry cases", name, r.Reason)
		}
	}
}

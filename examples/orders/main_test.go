package main

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestConformsUnderItsProfile runs the whole catalog with
// examples/orders.yaml against this independent server, one subtest per
// case instance: a correct implementation that makes other legal choices
// than the reference must get no fail and no warn (Strict), and every
// case the config supplies must decide.
func TestConformsUnderItsProfile(t *testing.T) {
	// Registered first, so it runs after the server and engine are gone.
	t.Cleanup(func() { goleak.VerifyNone(t) })
	tg, _, err := apispec.LoadConfig("../orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rep *scenarios.Report
	t.Run("catalog", func(t *testing.T) {
		idemchecktest.Handler(t, newShop(tg.TTL), idemchecktest.Config{Config: "../orders.yaml"},
			idemchecktest.Strict(), idemchecktest.OnReport(func(r *scenarios.Report) { rep = r }))
	})
	if rep == nil || len(rep.Results) == 0 {
		t.Fatal("the catalog ran no case")
	}
	counts := map[scenarios.Status]int{}
	for _, r := range rep.Results {
		counts[r.Status]++
		// Below MUST these only skip in go test; here they would mean the
		// config or the slow knob does not do its job: the oracle and the
		// overlap exist. The one exception is documented: a per-key oracle
		// cannot count a request that carries no key.
		keyless := r.ID == "missing/rejected" && r.Status == scenarios.Unverifiable && !tg.GlobalOracle()
		if (r.Status == scenarios.Unverifiable || r.Status == scenarios.Inconclusive) && !keyless {
			t.Errorf("%s: %s: %s", r.Name(), r.Status, r.Reason)
		}
	}
	if counts[scenarios.Pass] < len(rep.Results)/2 {
		t.Errorf("only %d of %d results passed: %v", counts[scenarios.Pass], len(rep.Results), counts)
	}
	t.Logf("%d results: %v in %s", len(rep.Results), counts, rep.Duration.Round(time.Millisecond))
}

package main

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/scenarios"
)

// TestConformsUnderItsProfile runs the whole catalog with
// examples/orders.yaml against this independent server: a correct
// implementation that makes other legal choices than the reference must
// get no fail and no warn, and every case the config supplies must decide.
func TestConformsUnderItsProfile(t *testing.T) {
	defer goleak.VerifyNone(t)
	target, profile, err := scenarios.LoadConfig("../orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newShop(target.TTL))
	defer srv.Close()
	target.BaseURL = srv.URL

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, target, profile, scenarios.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) == 0 {
		t.Fatal("the catalog ran no case")
	}
	counts := map[scenarios.Status]int{}
	for _, r := range rep.Results {
		counts[r.Status]++
		switch r.Status {
		case scenarios.Fail, scenarios.Warn, scenarios.Unverifiable, scenarios.Inconclusive:
			// Unverifiable/inconclusive would mean the config or the slow
			// knob does not do its job: the oracle and the overlap exist.
			t.Errorf("%s: %s: expected %s, observed %s %s", r.Name(), r.Status, r.Expected, r.Observed, r.Reason)
		case scenarios.Skip:
			t.Logf("%s skipped: %s", r.Name(), r.Reason)
		}
	}
	if counts[scenarios.Pass] < len(rep.Results)/2 {
		t.Errorf("only %d of %d results passed: %v", counts[scenarios.Pass], len(rep.Results), counts)
	}
	t.Logf("%d results: %v in %s", len(rep.Results), counts, rep.Duration.Round(time.Millisecond))
	srv.CloseClientConnections()
}

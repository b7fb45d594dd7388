package scenarios_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
)

// TestBurstCatchRate measures how often concurrent/same-key-burst catches
// the reference's check-then-insert defect (a 1 ms window between lookup
// and insert): IDEMCHECK_BURST_RUNS runs (at most 200) of the burst case
// alone, each against its own server, one at a time; IDEMCHECK_BURST_ROUNDS
// overrides the profile's rounds, and IDEMCHECK_BURST_NO_SLOW=1 sends every
// round with the normal body (the first one rides the slow variant). It only runs when asked (it is a
// measurement, not a check): the figure is in docs/conformance-engine.md.
func TestBurstCatchRate(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("IDEMCHECK_BURST_RUNS"))
	if runs <= 0 {
		t.Skip("set IDEMCHECK_BURST_RUNS=100 to measure the burst's catch rate")
	}
	runs = min(runs, 200)
	p := referenceProfile(t)
	p.BurstRounds, _ = strconv.Atoi(os.Getenv("IDEMCHECK_BURST_ROUNDS"))
	rounds, size := p.BurstRounds, p.BurstSize
	caught := 0
	start := time.Now()
	for i := range runs {
		tg := startDemo(t, "check-then-insert")
		tg.Operations = tg.Operations[:1]
		if os.Getenv("IDEMCHECK_BURST_NO_SLOW") != "" { // every round with the normal body
			delete(tg.Operations[0].Variants, scenarios.VariantSlow)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"concurrent/same-key-burst"}})
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if len(rep.Results) == 1 && rep.Results[0].Status == scenarios.Fail {
			caught++
		}
	}
	t.Logf("check-then-insert (1 ms window) caught in %d of %d runs (burst_rounds %d, burst_size %d; 0 = default) in %s", caught, runs, rounds, size, time.Since(start).Round(time.Second))
}

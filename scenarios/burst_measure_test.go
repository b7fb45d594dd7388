package scenarios_test

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestBurstCatchRate measures how often concurrent/same-key-burst catches
// a check-then-insert window of the reference: IDEMCHECK_BURST_DEFECT names
// it (check-then-insert, the default: a 1 ms window between lookup and
// insert; lookup-before-body: the window is the body's read, microseconds).
// IDEMCHECK_BURST_RUNS runs (at most 200) of the burst case alone, each
// against its own server, one at a time; IDEMCHECK_BURST_ROUNDS overrides
// the profile's rounds, IDEMCHECK_BURST_SYNC its burst_sync (last-byte,
// barrier), IDEMCHECK_BURST_H2=1 serves the reference over TLS with
// HTTP/2, and IDEMCHECK_BURST_NO_SLOW=1 sends every round with the normal
// body (the first one rides the slow variant). It only runs when
// asked (it is a measurement, not a check): the figures are in
// docs/conformance-engine.md.
func TestBurstCatchRate(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("IDEMCHECK_BURST_RUNS"))
	if runs <= 0 {
		t.Skip("set IDEMCHECK_BURST_RUNS=100 to measure the burst's catch rate")
	}
	runs = min(runs, 200)
	defect := os.Getenv("IDEMCHECK_BURST_DEFECT")
	if defect == "" {
		defect = "check-then-insert"
	}
	p := referenceProfile(t)
	p.BurstRounds, _ = strconv.Atoi(os.Getenv("IDEMCHECK_BURST_ROUNDS"))
	p.BurstSync = os.Getenv("IDEMCHECK_BURST_SYNC")
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	rounds, size := p.BurstRounds, p.BurstSize
	failed := regexp.MustCompile(`fail×(\d+)`)
	caught, roundsCaught := 0, 0
	start := time.Now()
	for i := range runs {
		tg := startDemoProto(t, os.Getenv("IDEMCHECK_BURST_H2") != "", defect)
		tg.Operations = tg.Operations[:1]
		if os.Getenv("IDEMCHECK_BURST_NO_SLOW") != "" { // every round with the normal body
			delete(tg.Operations[0].Variants, apispec.VariantSlow)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"concurrent/same-key-burst"}})
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if len(rep.Results) == 1 && rep.Results[0].Status == scenarios.Fail {
			caught++
			if m := failed.FindStringSubmatch(rep.Results[0].Observed); m != nil {
				n, _ := strconv.Atoi(m[1])
				roundsCaught += n
			}
		}
	}
	t.Logf("%s caught in %d of %d runs (%d rounds failed in all; burst_rounds %d, burst_size %d, burst_sync %q, h2 %v; 0/\"\" = default) in %s",
		defect, caught, runs, roundsCaught, rounds, size, p.BurstSync, os.Getenv("IDEMCHECK_BURST_H2") != "", time.Since(start).Round(time.Second))
}

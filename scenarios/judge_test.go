package scenarios_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
)

// TestInFlightOffsetsShortTTL: under a 2 s TTL (README's) the duplicates
// of no-inflight-lock re-run the 1.5 s slow variant and answer at about
// +2.7 s, past TTL − margin; they were sent at +0, +0.75 s and +1.2 s,
// inside it, so the double execution is a failure (it was judged by its
// answer time and ended inconclusive: "a stall: the retry was answered
// 2.711s after"). Up to 3 runs, for a loaded machine: never a pass, and
// at least one fail.
func TestInFlightOffsetsShortTTL(t *testing.T) {
	tg := startDemoTTL(t, 2*time.Second, "no-inflight-lock")
	var seen []string
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"concurrent/in-flight-offsets@charges"}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Results) != 1 {
			t.Fatalf("%d results, want 1", len(rep.Results))
		}
		r := rep.Results[0]
		switch r.Status {
		case scenarios.Fail:
			return
		case scenarios.Pass:
			t.Fatalf("no-inflight-lock passes %s: %s", r.Name(), r.Observed)
		}
		seen = append(seen, string(r.Status)+": "+r.Reason)
	}
	t.Errorf("no-inflight-lock under --ttl 2s never failed concurrent/in-flight-offsets: %q", seen)
}

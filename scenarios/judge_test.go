package scenarios_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reference/demo"
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

// TestOtherEndpointCounterOfOneOperation: one counter pointer for the
// whole API that counts charges only (oracle {url: /_effects, pointer:
// /charges}). scope/other-endpoint@charges sends the key to refunds, which
// that counter cannot see: the refund is judged by its own evidence (its
// id against the charge's), so the correct server is not failed ("replayed
// charges's response") and the defect is still caught — also when the
// refunds instances are left out of the run (calibration checks every
// operation a selected case touches). A start-up note says the counter is
// shared.
func TestOtherEndpointCounterOfOneOperation(t *testing.T) {
	for _, row := range []struct {
		defects []string
		want    scenarios.Status
	}{
		{nil, scenarios.Skip}, // ietf leaves scope_endpoint open: "independent" is recorded
		{[]string{"no-endpoint-scope"}, scenarios.Fail},
	} {
		tg := globalEffects(t, demo.Options{Defects: row.defects}, false, false)
		tg.Oracle.Pointer = "/charges"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"scope/other-endpoint"}, Skip: []string{"**/*@refunds"}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Results) != 1 {
			t.Fatalf("%v: %d results, want scope/other-endpoint@charges alone", row.defects, len(rep.Results))
		}
		r := rep.Results[0]
		if r.Status != row.want {
			t.Errorf("%v: %s: %s, want %s (observed %q, %s)", row.defects, r.Name(), r.Status, row.want, r.Observed, r.Reason)
		}
		if row.want == scenarios.Skip && !strings.Contains(r.Observed, "independent") {
			t.Errorf("%v: observed %q, want the independent execution recorded", row.defects, r.Observed)
		}
		notes := strings.Join(rep.Notes, "\n")
		if !strings.Contains(notes, "it does not count refunds") || !strings.Contains(notes, "POST /v1/refunds") {
			t.Errorf("%v: notes %q, want the shared counter named and refunds found unseen by it", row.defects, notes)
		}
	}
}

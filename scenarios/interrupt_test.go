package scenarios_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
)

// TestRunInterrupted: cancelling the run's context mid-run (what SIGINT
// does) judges nothing cut short: the instances in flight and those not
// started are interrupted, none fails against a correct server, and the
// report says interrupted (exit 130). Before, the cut requests showed as
// MUST failures ("after 3 retries: 409") or "context canceled"
// inconclusives.
func TestRunInterrupted(t *testing.T) {
	tg := startDemoTTL(t, 2*time.Second)
	p, err := scenarios.ProfileByName("ietf")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(700*time.Millisecond, cancel)
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Parallel: 8})
	if err != nil {
		t.Fatal(err)
	}
	cut := 0
	for _, r := range rep.Results {
		switch r.Status {
		case scenarios.Fail, scenarios.Warn, scenarios.Inconclusive:
			t.Errorf("%s: %s (%s): a cut-short case was judged", r.Name(), r.Status, r.Reason)
		case scenarios.Interrupted:
			cut++
		}
	}
	if j := rep.Judge(); !rep.Interrupted || cut == 0 || j.Outcome != scenarios.OutcomeInterrupted || j.Outcome.ExitCode() != 130 {
		t.Errorf("interrupted %t, %d instances interrupted, outcome %s: want interrupted, some, exit 130", rep.Interrupted, cut, j.Outcome)
	}
}

// TestRunCancelledAfterLastVerdict: a context that ends once every
// instance has its verdict (go test's, when the last subtest of
// idemchecktest.Handler finishes) interrupted nothing, so the run is not
// reported interrupted. Before, Run read ctx.Err() at the very end and
// turned a finished passing run into exit 130.
func TestRunCancelledAfterLastVerdict(t *testing.T) {
	tg := startDemoTTL(t, 2*time.Second)
	p, err := scenarios.ProfileByName("ietf")
	if err != nil {
		t.Fatal(err)
	}
	planned, err := scenarios.Plan(tg, p, scenarios.RunOptions{Run: []string{"replay/same-status"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	seen := 0
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"replay/same-status"}, OnResult: func(scenarios.Result) {
		if seen++; seen == len(planned) {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if j := rep.Judge(); rep.Interrupted || j.Outcome != scenarios.OutcomePass {
		t.Errorf("interrupted %t, outcome %s (%v): want a pass, nothing was cut short", rep.Interrupted, j.Outcome, j.Problems)
	}
}

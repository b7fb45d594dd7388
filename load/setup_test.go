package load_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// cancelTarget is the reference's cancel of a charge, on a fresh charge
// per key (setup:), an update whose answers all name that charge.
func cancelTarget(t *testing.T, o demo.Options) *apispec.Target {
	t.Helper()
	tg, _, err := apispec.ParseConfig(fmt.Appendf(nil, `base_url: %s
principals: [{name: alice, headers: {Authorization: Bearer alice}}]
operations:
%s`, demotest.Serve(t, o), demotest.CancelOperation))
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestSetupPerKey: load acts on each key's own fresh charge: every hit of
// a correct cancel replays its 200; a cancel that re-executes on retry
// answers 400 already cancelled, and the replays differ.
func TestSetupPerKey(t *testing.T) {
	opts := []load.Option{load.WithMode(load.ModeHit), load.WithPool(10), load.WithPlan(plan(t, "100@500ms"))}
	rep, err := load.Run(context.Background(), cancelTarget(t, demo.Options{}), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if h := rep.Paths[load.Hit]; rep.Violations != 0 || h.Requests == 0 || h.StatusCodes["200"] != h.Requests {
		t.Fatalf("correct cancel: violations %v codes %v", rep.ViolationList, h.StatusCodes)
	}
	rep, err = load.Run(context.Background(), cancelTarget(t, demo.Options{Defects: []string{"action-reexecutes"}}), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Violations == 0 || rep.ViolationList[0].Kind != load.ReplayDiffers {
		t.Fatalf("a cancel re-executed on retry went unnoticed: %+v", rep.ViolationList)
	}
}

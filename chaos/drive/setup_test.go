package drive_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos/drive"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// charges is the reference's create and its cancel of a charge (each key
// on a fresh charge: setup:), an update with a version.
func charges(t *testing.T, defects ...string) *apispec.Target {
	t.Helper()
	tg, _, err := apispec.ParseConfig(fmt.Appendf(nil, `base_url: %s
principals: [{name: alice, headers: {Authorization: Bearer alice}}]
oracle: {url: "/v1/effects?key={key}", pointer: /executions}
operations:
  - name: create-charge
    method: POST
    path: /v1/charges
    id_pointer: /id
    headers: {Content-Type: application/json}
    body: {amount: 1000, currency: usd}
%s`, demotest.Serve(t, demo.Options{Defects: defects}), demotest.CancelOperation))
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestSetupAndOperation: chaos acts on a fresh charge per key of the
// cancel and reads each operation's own pointer: the correct build shows
// no violation over both operations (the cancel's answers all carry its
// charge's id, never read as another key's); --operation cancel-charge
// drives the cancel alone, and a cancel that re-executes on retry (its
// lost answer's retry gets 400 already cancelled) is a violation.
func TestSetupAndOperation(t *testing.T) {
	run := func(tg *apispec.Target, opts ...drive.Option) *drive.Result {
		t.Helper()
		opts = append(opts, drive.WithOps(120), drive.WithConcurrency(8), drive.WithFaults(mustRules("drop-response:0.3")...),
			drive.WithSeed(3), drive.WithDeadline(time.Minute))
		res, err := drive.Run(context.Background(), tg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(charges(t)); len(res.Violations) != 0 || res.Ops != 120 {
		t.Fatalf("correct build: %d ops, violations %+v", res.Ops, res.Violations)
	}
	res := run(charges(t, "action-reexecutes"), drive.WithOperations("cancel-charge"))
	if len(res.Violations) == 0 {
		t.Fatalf("a cancel re-executed on retry went unnoticed (%d ops)", res.Ops)
	}
	t.Logf("%d violations, e.g. %s: %s", len(res.Violations), res.Violations[0].Rule, res.Violations[0].Detail)
}

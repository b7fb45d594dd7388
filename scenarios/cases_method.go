package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// METHOD: which methods honour the key. The draft names POST and PATCH;
// Stripe says a key on GET or DELETE "has no effect" (trap C21: an ignored
// key on a safe method is not a failure).
func init() {
	register(
		Case{Meta: Meta{ID: "method/get-ignores-key", Family: "method", Requirements: []string{"IK-METHOD-1"}, Level: Should,
			Requirement: "Stripe (on GET and DELETE the key has no effect), Adyen (POST only): on methods outside the key's scope the key is ignored and the current state returned, not a stored copy.",
			Explanation: "GETs of two created resources (their Location) under one key each return that resource, as the same GET without a key does."},
			PerOperation: true, Skips: skipGetOperation, Unfit: unlessMethods, Run: methodGetIgnoresKey},
		Case{Meta: Meta{ID: "method/patch-honours-key", Family: "method", Requirements: []string{"IK-METHOD-2"}, Level: Should,
			Requirement: "draft abstract: the Idempotency-Key makes non-idempotent methods such as POST or PATCH fault-tolerant; a PATCH operation honours the key like POST.",
			Explanation: "On a PATCH operation, retries with the same key replay the original and execute once (needs the oracle: every PATCH names the same resource)."},
			PerOperation: true, UsesOracle: true, Skips: skipNotPatch, Unfit: unlessMethods, Run: methodPatchHonoursKey},
	)
}

// noBody is an explicitly empty request body (a nil Req.Body means the
// operation's body).
var noBody = json.RawMessage{}

func skipGetOperation(_ *apispec.Target, _ *apispec.Profile, op *apispec.Operation) string {
	if op.Method == http.MethodGet {
		return "the operation itself is a GET"
	}
	return ""
}

func methodGetIgnoresKey(ctx context.Context, e *Env) Verdict {
	a, bad := e.original(ctx, e.NewKey(), nil)
	if bad != nil {
		return *bad
	}
	locA := e.location(a)
	if locA == "" {
		return e.Skip("needs a read operation: the create response carries no Location on the target")
	}
	b, bad := e.original(ctx, e.NewKey(), nil)
	if bad != nil {
		return *bad
	}
	locB := e.location(b)
	k := e.NewKey()
	getA := e.Send(ctx, Req{Label: "GET the first resource with a key", Key: k, Method: http.MethodGet, Path: locA, Body: noBody})
	plainA := e.Send(ctx, Req{Label: "GET the first resource without a key", NoKey: true, Method: http.MethodGet, Path: locA, Body: noBody})
	getB := e.Send(ctx, Req{Label: "GET the second resource with the same key", Key: k, Method: http.MethodGet, Path: locB, Body: noBody})
	observed := fmt.Sprintf("GET %s with key %s, without %s; GET %s with the same key %s", locA, getA.String(), plainA.String(), locB, getB.String())
	if v := e.lostConn(getA, plainA, getB); v != nil {
		return *v
	}
	switch {
	case !plainA.OK():
		return e.Inconclusive("the resource cannot be read without a key either: " + observed)
	case getA.Is5xx() || getB.Is5xx() || getA.Err != nil || getB.Err != nil:
		return e.Unmet("the key ignored on GET, never a 5xx", observed)
	case !getA.OK() || !getB.OK():
		// Trap C21: sources only say the key has no effect on GET; a
		// refusal is recorded, not judged.
		return Verdict{Status: Skip, Observed: observed, Reason: "the key is refused on GET; recorded, not judged"}
	case jsonEqual(getA.Body, getB.Body) && !jsonEqual(a.Body, b.Body):
		return e.Unmet("each GET returns its own resource", "the second GET replayed the first: "+observed)
	case !jsonEqual(getA.Body, plainA.Body):
		return e.Unmet("the same representation as the GET without a key", observed)
	}
	return e.Pass(observed)
}

func skipNotPatch(_ *apispec.Target, _ *apispec.Profile, op *apispec.Operation) string {
	if op.Method != http.MethodPatch {
		return "needs a PATCH operation in the config; this one is " + op.Method
	}
	return ""
}

func methodPatchHonoursKey(ctx context.Context, e *Env) Verdict {
	if !e.HasOracle() {
		// Every PATCH of one resource names the same id: only an oracle can
		// count its executions.
		return e.Unverifiable("needs oracle: a PATCH returns the same resource id each time")
	}
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	rs := []wire.Resp{first}
	for i := 1; i <= 2; i++ {
		rs = append(rs, e.Send(ctx, Req{Label: fmt.Sprintf("retry %d", i), Key: k}))
	}
	n, err := e.Executions(ctx, k)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	if v := e.lostConn(rs...); v != nil && n == 1 {
		return *v
	}
	how := "oracle"
	observed := fmt.Sprintf("%d, retries %s and %s; %d executions (%s)", first.Status, rs[1].String(), rs[2].String(), n, how)
	if n != 1 {
		return e.Unmet("exactly 1 execution for the PATCH", observed)
	}
	for _, r := range rs[1:] {
		if same, diff := e.SameResponse(first, r); !same {
			return e.Unmet("the original PATCH response replayed", diff)
		}
	}
	return e.Pass(observed)
}

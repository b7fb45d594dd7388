package scenarios

import (
	"context"
	"fmt"

	"github.com/idemcheck/idemcheck/apispec"
)

// MISSING: a request without a key on an operation documented as
// requiring one (draft §2.7), or processed normally where the key is
// optional (Stripe, Adyen).
func init() {
	register(
		Case{Meta: Meta{ID: "missing/rejected", Family: "missing", Requirements: []string{"IK-MISSING-1"}, Level: Should,
			Requirement: "draft §2.7: if the Idempotency-Key request header is missing for a documented idempotent operation requiring this header, the resource SHOULD reply with an HTTP 400 status code; the resource MUST fail the request (an error that executed anyway did not fail it).",
			Explanation: "A request without the key on a key-requiring operation gets 400 and does not execute: a 400 after an execution fails. Counting a keyless execution needs an oracle without {key} (a global or per-operation counter) or the downstream double (it marks the request with a token of its own); with a per-key oracle alone the 400 is unverifiable."},
			Proof:        ByRefusal,
			PerOperation: true, Skips: skipKeyOptional, Run: missingRejected},
		Case{Meta: Meta{ID: "missing/problem-link", Family: "missing", Requirements: []string{"IK-MISSING-2", "IK-PROBLEM-1", "IK-PROBLEM-2"}, Level: Should,
			Requirement: "draft §2.7: the 400 response SHOULD carry a body or Link header pointing to relevant documentation (problem+json type, or Link rel=\"describedby\").",
			Explanation: "The missing-key error links to the idempotency documentation."},
			Proof:        ByRefusal,
			PerOperation: true, Skips: skipKeyNotRequiredOrNoProblem, Unfit: unlessProblems, Run: missingProblemLink},
		Case{Meta: Meta{ID: "missing/repeat-fails-again", Family: "missing", Requirements: []string{"IK-MISSING-3"}, Level: Must,
			Requirement: "draft §2.7: clients MUST correct the request before retrying, or the resource MUST fail the request and return one of the above errors.",
			Explanation: "A request without a key fails (a keyless success fails this MUST), and repeating it fails again the same way: nothing was recorded."},
			Proof:        ByRefusal,
			PerOperation: true, Skips: skipKeyNotRequired, Run: missingRepeatFailsAgain},
		Case{Meta: Meta{ID: "missing/optional-executes", Family: "missing", Requirements: []string{"IK-MISSING-4"}, Level: Should,
			Requirement: "Profile key_required false (Stripe, Adyen, PayPal): a request without a key is processed normally, without idempotency.",
			Explanation: "Where the key is optional, every keyless request executes on its own.",
			Needs:       []Need{NeedIDPointer}},
			Proof:        ByFresh,
			PerOperation: true, Skips: skipKeyRequired, Run: missingOptionalExecutes},
	)
}

func skipKeyOptional(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	if p.KeyRequired == apispec.No {
		return NotApplicable + " where the key is optional: profile key_required is false (see missing/optional-executes)"
	}
	return ""
}

func missingRejected(ctx context.Context, e *Env) Verdict {
	// A keyless request can only be counted by an oracle that is not
	// per key (the run is then serial, and the counter is read around
	// it), or by the downstream double, which marks it with a token.
	counted := e.HasOracle() && (e.Target.GlobalOracle() || e.double.CountsKeyless(e.Op))
	var before int
	if counted {
		var err error
		if before, err = e.Executions(ctx, ""); err != nil {
			return e.Inconclusive(err.Error())
		}
	}
	r := e.Send(ctx, Req{Label: "no key", NoKey: true})
	if v := e.lostConn(r); v != nil {
		return *v
	}
	executed, how := r.OK(), "answered "+r.String()
	if counted && r.Err == nil {
		after, err := e.Executions(ctx, "")
		if err != nil {
			return e.Inconclusive(err.Error())
		}
		if after > before {
			executed, how = true, fmt.Sprintf("answered %s; the oracle counted %d executions", r.String(), after-before)
		}
	}
	if e.Profile.KeyRequired == apispec.Unknown {
		return e.Finding("key_required", how)
	}
	expected := fmt.Sprintf("%v and no execution", e.Profile.MissingStatus)
	// A profile that names no status (its document names none) takes any
	// 4xx.
	refused := r.StatusIn(e.Profile.MissingStatus) || (len(e.Profile.MissingStatus) == 0 && r.Is4xx())
	if len(e.Profile.MissingStatus) == 0 {
		expected = "an error and no execution"
	}
	switch {
	case r.Err != nil:
		// No answer of the API's: what it would have answered is unknown.
		return e.Inconclusive("the keyless request got no answer: " + r.String())
	case executed && !r.OK():
		return e.Fail(expected, "executed, then answered an error: "+how)
	case r.OK():
		// A success did not fail the request: the draft's MUST, not
		// only its SHOULD of a 400.
		return e.Fail(expected, "executed without a key: "+how)
	case refused && !counted:
		return e.Unverifiable(fmt.Sprintf("answered %s as expected, but whether it executed cannot be counted: the oracle counts per key and the request has none (declare an oracle URL without {key}, a global or per-operation counter, or oracle: {downstream: ROUTE} with a marker)", r.StatusText()))
	case refused:
		return e.Pass(r.StatusText() + "; no execution (oracle)")
	}
	return e.Unmet(expected, how)
}

func skipKeyNotRequiredOrNoProblem(t *apispec.Target, p *apispec.Profile, op *apispec.Operation) string {
	if r := skipKeyNotRequired(t, p, op); r != "" {
		return r
	}
	return skipNoProblemJSON(t, p, op)
}

func missingProblemLink(ctx context.Context, e *Env) Verdict {
	r := e.Send(ctx, Req{Label: "no key", NoKey: true})
	if !r.Is4xx() {
		return e.Inconclusive("the keyless request was not rejected (see missing/rejected): " + r.String())
	}
	return e.docLinkVerdict(r)
}

func skipKeyNotRequired(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	switch p.KeyRequired {
	case apispec.Yes:
		return ""
	case apispec.No:
		return NotApplicable + " where the key is optional: profile key_required is false (see missing/optional-executes)"
	default:
		return "profile key_required is not true"
	}
}

func missingRepeatFailsAgain(ctx context.Context, e *Env) Verdict {
	a := e.Send(ctx, Req{Label: "no key", NoKey: true})
	if v := e.lostConn(a); v != nil {
		return *v
	}
	switch {
	case a.Err != nil:
		return e.Inconclusive("the keyless request got no answer: " + a.String())
	case a.OK():
		// The key is required and the request succeeded without it: the
		// resource did not fail it, which this MUST forbids.
		return e.Fail("an error (the request failed), then the same error again", "the keyless request succeeded: "+a.String())
	}
	b := e.Send(ctx, Req{Label: "no key again", NoKey: true})
	observed := fmt.Sprintf("%s then %s", a.StatusText(), b.String())
	if v := e.lostConn(b); v != nil {
		return *v
	}
	if b.Status != a.Status || b.Err != nil {
		return e.Fail(fmt.Sprintf("%d again", a.Status), observed)
	}
	return e.Pass(observed)
}

func skipKeyRequired(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	switch p.KeyRequired {
	case apispec.No:
		return ""
	case apispec.Yes:
		return NotApplicable + " where the key is required: profile key_required is true (see missing/rejected)"
	default:
		return "profile key_required is not false (see missing/rejected)"
	}
}

func missingOptionalExecutes(ctx context.Context, e *Env) Verdict {
	a := e.Send(ctx, Req{Label: "no key", NoKey: true})
	b := e.Send(ctx, Req{Label: "no key again", NoKey: true})
	observed := fmt.Sprintf("%s, then %s", a.String(), b.String())
	if v := e.lostConn(a, b); v != nil {
		return *v
	}
	if !a.OK() || !b.OK() {
		return e.Unmet("both keyless requests processed normally", observed)
	}
	if ids := e.DistinctIDs(a, b); len(ids) != 2 {
		return e.Unmet("two executions (two created resources)", observed)
	}
	return e.Pass(observed)
}

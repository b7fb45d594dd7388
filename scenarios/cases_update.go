package scenarios

import (
	"context"
	"fmt"

	"github.com/idemcheck/idemcheck/apispec"
)

// UPDATE: operations that change an existing resource (kind: update).
// Every answer names the same resource, so the id proves nothing; the
// stored answer is the evidence. The mismatch, replay and method cases
// run on updates too, judged by the oracle or the version_pointer.
func init() {
	register(
		Case{Meta: Meta{ID: "update/after-other-key", Family: "update", Requirements: []string{"IK-UPDATE-1"}, Level: Must,
			Requirement: "draft §2.6: a retry under a used key returns the stored response of its first execution; on an update, after another key changed the same resource, that is still the first answer, not the resource's current state (unless the API documents replaying the current state: profile replay: current-state).",
			Explanation: "Key A changes the resource, key B (another body: the operation's first body mutation) changes the same resource, then A is retried: its answer must equal A's first answer and add no execution."},
			PerOperation: true, UsesOracle: true, Skips: skipNotUpdate, Run: updateAfterOtherKey},
	)
}

func skipNotUpdate(_ *apispec.Target, _ *apispec.Profile, op *apispec.Operation) string {
	switch _, ok := op.BodyMutation(); {
	case !op.Updates():
		return NotApplicable + " to a create: the operation is no update (kind: update, or a PATCH/PUT learned as one)"
	case !ok:
		return "needs a body mutation: another key's change of the same resource"
	}
	return ""
}

func updateAfterOtherKey(ctx context.Context, e *Env) Verdict {
	a, b := e.NewKey(), e.NewKey()
	first, bad := e.original(ctx, a, nil)
	if bad != nil {
		return *bad
	}
	m, _ := e.Op.BodyMutation()
	other := e.Send(ctx, Req{Label: "another key changes the same resource", Key: b, Body: e.Body(m.Patch), SetupOf: a})
	if v := e.lostConn(other); v != nil {
		return *v
	}
	if !other.OK() && !other.Is4xx() {
		return e.Inconclusive("the other key's change did not succeed, the resource is unchanged: " + other.String())
	}
	retry := e.Send(ctx, Req{Label: "retry of the first key", Key: a})
	if v := e.lostConn(retry); v != nil {
		return *v
	}
	observed := fmt.Sprintf("first %s; other key %s; retry %s", first.String(), other.String(), retry.String())
	if !other.OK() {
		// A once-only action (a capture, a cancel): no other key can change
		// the resource, so the rule has nothing to hold; a retry that is
		// not the stored answer still breaks the replay.
		if same, diff := e.SameResponse(first, retry); !same {
			return e.inTTL(e.Unmet("the stored answer of the first key's execution", diff+": "+observed), first, retry)
		}
		return e.Skip(NotApplicable + " to a once-only action: the other key's change was refused, no key changes the resource after the first (the retry got the stored answer): " + observed)
	}
	if same, diff := e.SameResponse(first, retry); !same {
		what := "not the stored answer (" + diff + ")"
		if jsonEqual(retry.Body, other.Body) {
			what = "the resource's current state, the other key's change (" + diff + ")"
			if e.Profile.Replay == apispec.ReplayCurrentState {
				return e.Pass("the current state, as the profile documents (replay: current-state): " + observed)
			}
		}
		return e.inTTL(e.Unmet("the stored answer of the first key's execution", what+": "+observed), first, retry)
	}
	if !e.HasOracle() {
		return e.Pass(observed + "; the stored answer (no oracle: executions not counted)")
	}
	n, err := e.Executions(ctx, a)
	if err != nil {
		return e.Inconclusive(err.Error() + ": " + observed)
	}
	observed += fmt.Sprintf("; %d executions under the first key (oracle)", n)
	if n != 1 {
		return e.inTTL(e.Fail("exactly 1 execution under the first key", observed), first, retry)
	}
	return e.Pass(observed)
}

package scenarios

import (
	"context"
	"fmt"
	"time"
)

// FIRST_SENT: AEP-155's key is a message {key, first_sent}, and the
// server judges the time: "API servers must reject requests with expired
// keys, and must reject requests with keys that are in the future." The
// requirement (IK-FIRSTSENT-1) is AEP-155's, not the draft's: it exists
// only for a target whose key has a first_sent (key: {field: ...,
// first_sent: true}); any other target reaches its level without it, as
// a run without events: does without IK-OUTBOX-1 (requirementState.optIn).
// AEP-155's "should reject requests that use the same key but have a
// different first_sent" is probed by mismatch/changed-body
// (firstSentProbe), a changed request under a used key.

// NeedFirstSent: an AEP-155 key, a message {key, first_sent}.
const NeedFirstSent Need = "first-sent"

// firstSentFuture is how far ahead the future first_sent probe is: beyond
// any clock skew a server tolerates.
const firstSentFuture = time.Hour

const firstSentRequirement = "AEP-155: \"The first_sent field can be used by API servers to determine if a key is expired. API servers must reject requests with expired keys, and must reject requests with keys that are in the future.\""

func init() {
	register(
		Case{Meta: Meta{ID: "syntax/first-sent-expired", Family: "syntax", Requirements: []string{"IK-FIRSTSENT-1"}, Level: Must,
			Requirement: firstSentRequirement,
			Explanation: "A fresh key whose first_sent lies past the declared ttl (twice it, at least a minute past it) is refused with an error and executes nothing, while the same message with first_sent now is accepted.",
			Needs:       []Need{NeedFirstSent, NeedTTL}},
			Proof:        ByRefusal,
			PerOperation: true, UsesOracle: true, Run: firstSentExpired},
		Case{Meta: Meta{ID: "syntax/first-sent-future", Family: "syntax", Requirements: []string{"IK-FIRSTSENT-1"}, Level: Must,
			Requirement: firstSentRequirement,
			Explanation: "A fresh key whose first_sent is an hour in the future is refused with an error and executes nothing, while the same message with first_sent now is accepted.",
			Needs:       []Need{NeedFirstSent}},
			Proof:        ByRefusal,
			PerOperation: true, UsesOracle: true, Run: firstSentFutureCase},
	)
}

func firstSentExpired(ctx context.Context, e *Env) Verdict {
	ttl := e.Target.TTL
	if ttl <= 0 {
		return e.Skip("ttl: never: no first_sent is expired under a retention without end")
	}
	ago := ttl + max(ttl, time.Minute)
	return e.judgeFirstSent(ctx, fmt.Sprintf("first_sent %s ago (ttl %s: expired)", ago, ttl), -ago)
}

func firstSentFutureCase(ctx context.Context, e *Env) Verdict {
	return e.judgeFirstSent(ctx, fmt.Sprintf("first_sent %s in the future", firstSentFuture), firstSentFuture)
}

// judgeFirstSent sends the normal request under a fresh key with
// first_sent shifted by shift from now, after a control with first_sent
// now under another fresh key: with the control accepted, the first_sent
// is all that differs. An error that executed nothing passes; an
// acceptance, an execution or a 5xx fails.
func (e *Env) judgeFirstSent(ctx context.Context, name string, shift time.Duration) Verdict {
	control := e.Send(ctx, Req{Label: "control, first_sent now", Key: e.NewKey()})
	if v := e.lostConn(control); v != nil {
		return *v
	}
	if !control.OK() {
		return e.Inconclusive("the normal call did not succeed with first_sent now, so a refusal would not show first_sent's: " + control.String())
	}
	k := e.NewKey()
	r := e.Send(ctx, Req{Label: name, Key: k, FirstSent: time.Now().UTC().Truncate(time.Millisecond).Add(shift)})
	observed := name + ": " + r.String()
	executed := 0
	if e.HasOracle() {
		n, err := e.Executions(ctx, k)
		if err != nil {
			return e.Inconclusive(err.Error() + ": " + observed)
		}
		executed = n
		observed += fmt.Sprintf(", %s (oracle)", plural(n, "execution"))
	}
	if v := e.lostConn(r); v != nil && executed == 0 {
		return *v
	}
	const expected = "an error refusing the key (AEP-155: must reject), no execution"
	switch {
	case executed > 0 && !r.OK():
		return e.Fail(expected, "executed, then answered an error: "+observed)
	case r.OK():
		return e.Fail(expected, "accepted: "+observed)
	case r.Is5xx() || r.Err != nil:
		return e.Fail(expected+", never a server error", observed)
	}
	return e.Pass(observed)
}

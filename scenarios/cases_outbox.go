package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/wire"
)

// OUTBOX: the events an API publishes per execution, read from its broker
// (events:). The seed documents' rule: the idempotency record and the
// outbound message commit in one transaction (the transactional outbox),
// or a crash or a retry between them loses the event or publishes it
// twice, and a replay publishes nothing. Each case sends one shape of
// traffic and holds each key's events against its executions (outbox.go).
const outboxRequirement = "seeds, research/reported-defects-and-carriers.md: the dedup row and the outbound message must commit in one transaction (transactional outbox); a crash between them re-executes or loses the event. "

func init() {
	outbox := func(id, requirement, explanation string, needs []Need, run func(context.Context, *Env) Verdict) Case {
		return Case{Meta: Meta{ID: "outbox/" + id, Family: "outbox", Requirements: []string{"IK-OUTBOX-1"}, Level: Must,
			Requirement: outboxRequirement + requirement, Explanation: explanation, Needs: append([]Need{NeedEvents}, needs...)},
			PerOperation: true, UsesOracle: true, Run: run}
	}
	register(
		outbox("one-per-execution", "An executed key publishes exactly one event.",
			"One request under a fresh key: exactly one event for its key (one id), once the relay has had events.settle to publish it.",
			nil, outboxOnePerExecution),
		outbox("none-for-replay", "A replay publishes nothing.",
			"The original and two retries that are replayed: still exactly one event for the key.",
			nil, outboxNoneForReplay),
		outbox("lost-answer-retry", "A retry after a lost answer publishes nothing more.",
			"The proxy lets the original commit and drops its answer; the retries get the committed outcome: one event for the key.",
			nil, outboxLostAnswerRetry),
		outbox("client-hangup-retry", "A retry after the client gave up while the handler ran publishes one event per execution.",
			"The proxy sends the slow variant and hangs up halfway through it (over gRPC: cancels the call); the retries get the outcome: one event per execution, one when the API executed once.",
			[]Need{NeedSlow}, outboxClientHangupRetry),
		outbox("same-key-burst", "Same-key requests at once publish one event per execution.",
			"Eight same-key requests released together: as many events as executions, one when the API executed once.",
			nil, outboxSameKeyBurst),
		outbox("none-for-mismatch", "A request refused for a mismatched body did not execute and publishes nothing.",
			"The original, then a materially different body under its key, answered with an error: one event, the original's.",
			nil, outboxNoneForMismatch),
		outbox("none-for-rejected", "A request rejected as invalid did not execute and publishes nothing.",
			"The invalid variant under a fresh key is rejected: no event for its key.",
			[]Need{NeedInvalid}, outboxNoneForRejected),
		Case{Meta: Meta{ID: "outbox/lease-takeover", Family: "outbox", Requirements: []string{"IK-OUTBOX-1"}, Level: Must,
			Requirement: outboxRequirement + "An execution whose outcome is not stored (its lease was taken over, its transaction rolled back) publishes no event; the one that is stored publishes one.",
			Explanation: "A slow original outlives the lease and a retry takes the key over: as many events as executions the oracle counts (one where the store rolls the loser back).",
			Needs:       []Need{NeedEvents, NeedSlow, NeedLease}},
			PerOperation: true, UsesOracle: true, Skips: skipSlowWithinLease, Run: outboxLeaseTakeover},
		// Not UsesOracle: an oracle counts the failed attempt (a provider
		// call, an order row), which publishes nothing; the answers decide.
		Case{Meta: Meta{ID: "outbox/none-for-failed", Family: "outbox", Requirements: []string{"IK-OUTBOX-1"}, Level: Must,
			Requirement: outboxRequirement + "A request whose execution failed and was not stored publishes nothing; a retry that then executes publishes exactly one.",
			Explanation: "The transient_error variant under a fresh key is answered with a 5xx: no event for its key. Where the downstream double plays the variant (the same body), the normal request is then retried under the key until it succeeds: exactly one event, the retry's.",
			Needs:       []Need{NeedEvents, NeedTransientError}},
			PerOperation: true, Skips: skipCached5xx, Run: outboxNoneForFailed},
	)
}

func outboxOnePerExecution(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	r := e.Send(ctx, Req{Label: "one request", Key: k})
	if !r.OK() {
		return e.Inconclusive("the normal call did not succeed: " + r.String())
	}
	return e.judgeOutbox(ctx, e.wantOf(k, "the key", r))
}

func outboxNoneForReplay(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, v := e.original(ctx, k, nil)
	if v != nil {
		return *v
	}
	rs := []wire.Resp{first}
	for i := 1; i <= 2; i++ {
		r := e.Send(ctx, Req{Label: fmt.Sprintf("retry %d (a replay)", i), Key: k})
		if v := e.lostConn(r); v != nil {
			return *v
		}
		rs = append(rs, r)
	}
	return e.judgeOutbox(ctx, e.wantOf(k, "the key", rs...))
}

func outboxLostAnswerRetry(ctx context.Context, e *Env) Verdict {
	pr, err := e.viaProxy("drop-response:attempt=1")
	if err != nil {
		return e.Inconclusive("chaos proxy: " + err.Error())
	}
	defer pr.close()
	k := e.NewKey()
	first := pr.Send(ctx, Req{Label: "original (the proxy drops the answer)", Key: k})
	if !pr.answerLost(first) {
		return e.Inconclusive("the proxy did not drop the answer: " + first.String())
	}
	if _, ok := pr.committedID(pr.upstreamSettled(ctx, k)); !ok {
		return e.Inconclusive("the original did not succeed upstream")
	}
	rs := append([]wire.Resp{first}, pr.untilDone(ctx, "retry", k, nil)...)
	if !rs[len(rs)-1].OK() {
		return e.Inconclusive("the retries did not end with the committed outcome: " + rs[len(rs)-1].String())
	}
	w := e.wantOf(k, "the key", rs...)
	if ids := pr.ids(k, rs...); len(ids) > w.answered {
		w.answered = len(ids) // the proxy saw more created ids than the client
	}
	return pr.judgeOutbox(ctx, w)
}

func outboxClientHangupRetry(ctx context.Context, e *Env) Verdict {
	pr, k, body, first, bad := e.hangupOriginal(ctx)
	if pr != nil {
		defer pr.close()
	}
	if bad != nil {
		return *bad
	}
	rs := append([]wire.Resp{first}, pr.untilDone(ctx, "retry", k, body)...)
	if !rs[len(rs)-1].OK() {
		return e.Inconclusive("the retries did not end with an outcome: " + rs[len(rs)-1].String())
	}
	return pr.judgeOutbox(ctx, e.wantOf(k, "the key", rs...))
}

// outboxBurstSize is the same-key burst of outbox/same-key-burst: enough
// to race, few enough to list their events.
const outboxBurstSize = 8

func outboxSameKeyBurst(ctx context.Context, e *Env) Verdict {
	c, done := e.warm(ctx, outboxBurstSize)
	defer done()
	k := e.NewKey()
	rs := e.burst(ctx, c, k, outboxBurstSize, nil, "same-key request")
	if v := e.lostConn(rs...); v != nil {
		return *v
	}
	w := e.wantOf(k, "the burst's key", rs...)
	if w.answered == 0 {
		return e.Inconclusive("no request of the burst succeeded: " + w.how)
	}
	return e.judgeOutbox(ctx, w)
}

func outboxNoneForMismatch(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, mismatch, pr, v := e.mismatchError(ctx, k)
	if v != nil {
		return *v
	}
	if v := e.lostConn(mismatch); v != nil {
		return *v
	}
	if mismatch.OK() && e.CreatedID(mismatch) == e.CreatedID(first) {
		return e.Inconclusive(fmt.Sprintf("the %s was answered as a replay (%s): the mismatch/ cases judge that; nothing here was refused", pr.name, mismatch.String()))
	}
	return e.judgeOutbox(ctx, e.wantOf(k, "the key", first, mismatch))
}

func outboxNoneForRejected(ctx context.Context, e *Env) Verdict {
	body, _, _ := e.Variant(apispec.VariantInvalid)
	k := e.NewKey()
	r := e.Send(ctx, Req{Label: "invalid variant", Key: k, Body: body})
	if v := e.lostConn(r); v != nil {
		return *v
	}
	if r.Err != nil || r.Status < 400 || r.Status >= 500 {
		return e.Inconclusive("the invalid variant was not rejected with a 4xx: " + r.String())
	}
	return e.judgeOutbox(ctx, e.wantOf(k, "the rejected key", r))
}

func outboxLeaseTakeover(ctx context.Context, e *Env) Verdict {
	k, slow, retry := e.retryPastLease(ctx)
	if !retry.Start.Before(slow.End) {
		return e.Missed("could not overlap: the retry was sent after the slow original completed")
	}
	if v := e.lostConn(slow, retry); v != nil {
		return *v
	}
	w := e.wantOf(k, "the key", slow, retry)
	if w.answered == 0 {
		return e.Inconclusive("neither the slow original nor the retry succeeded: " + w.how)
	}
	return e.judgeOutbox(ctx, w)
}

// skipCached5xx: under cache_5xx true a failed execution is stored as the
// key's outcome, and whether a stored failure is announced (a failure
// event, or nothing) the rule does not say.
func skipCached5xx(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	if p.Cache5xx == apispec.Yes {
		return "profile cache_5xx is true: a failed execution is the key's stored outcome, and whether it publishes an event is the API's choice"
	}
	return ""
}

// outboxFailedRetries bounds the retries of outbox/none-for-failed after
// the failure, beside the time releaseBound gives them.
const outboxFailedRetries = 20

func outboxNoneForFailed(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, body, bad := e.failedFirst(ctx, k, apispec.VariantTransientError)
	if bad != nil {
		return *bad
	}
	if _, v, _ := e.Variant(apispec.VariantTransientError); v.Downstream == nil || !jsonEqual(body, e.Op.Body) {
		// A body of its own: the normal request under the key would be
		// another request (a mismatch), so the failure is judged alone.
		w := e.wantOf(k, "the failed key", first)
		w.byAnswers = true
		return e.judgeOutbox(ctx, w)
	}
	// The double failed the key's provider call; it now answers as the
	// route does, and the normal request under the key can succeed.
	if err := e.double.EndVariant(e.Op, k, apispec.VariantTransientError); err != nil {
		return e.Inconclusive("downstream double: " + err.Error())
	}
	bound, poll := e.releaseBound()
	limit := first.End.Add(bound)
	rs := []wire.Resp{first}
	var timeline []string
	for attempt := 1; ; attempt++ {
		r := e.Send(ctx, Req{Label: fmt.Sprintf("retry %d (the normal request; the provider recovered)", attempt), Key: k})
		rs = append(rs, r)
		timeline = append(timeline, fmt.Sprintf("+%s %s", r.Start.Sub(first.End).Round(time.Millisecond), statusOf(r)))
		observed := fmt.Sprintf("the %s variant answered %s; retries after it: %s", apispec.VariantTransientError, first.StatusText(), strings.Join(timeline, ", "))
		switch {
		case r.OK():
			w := e.wantOf(k, "the key", rs...)
			w.byAnswers = true
			return e.judgeOutbox(ctx, w)
		case r.Err == nil && r.SameStatus(first) && jsonEqual(first.Body, r.Body):
			return e.Inconclusive("a retry was answered with the failure again, a replay: the API stored the failure as the key's outcome (cache_5xx), so nothing here failed without being stored: " + observed)
		case r.Err == nil && !r.Is5xx() && !r.StatusIn(e.Profile.InFlightStatus):
			return e.Inconclusive("a retry was answered neither with a success nor as in flight (errors/failure-releases-key judges that): " + observed)
		case attempt >= outboxFailedRetries || time.Now().After(limit):
			if v := e.lostConn(r); v != nil {
				return *v
			}
			return e.Inconclusive(fmt.Sprintf("no retry succeeded within %s of the failure (errors/failure-releases-key judges a key left in flight): %s", bound, observed))
		}
		if err := clock.Until(ctx, time.Now().Add(poll)); err != nil {
			return e.Inconclusive("case budget ran out: " + observed)
		}
	}
}

package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/wire"
)

// The client gives up while the handler runs: the chaos proxy sends the
// whole request, then hangs up (over gRPC cancels the call) before any
// answer. On many stacks that cancels the request's context mid-handler:
// a result write under it fails, the claim is released, and the retry
// executes again (fullstackhero/dotnet-starter-kit PR #1333). Only a
// handler still running when the hang-up comes can show it, so the slow
// variant (its duration, or the downstream double's delay) makes the
// window: without it the case does not apply (NeedSlow), and a handler
// that answered before the hang-up leaves it inconclusive.
func init() {
	register(
		Case{Meta: Meta{ID: "lost/client-hangup", Family: "lost", Requirements: []string{"IK-LOST-4"}, Level: Must,
			Requirement: "draft §1 (motivation), Stripe: a client that gives up while the handler runs (the request fully sent, no answer yet) and retries with the same key gets the committed outcome; the operation executes once.",
			Explanation: "The proxy sends the slow variant whole and hangs up halfway through its duration (over gRPC: cancels the call); once the handler has had its time, the retries with the same key get one outcome and the oracle shows one execution.",
			Needs:       []Need{NeedSlow, NeedEffects}},
			PerOperation: true, Run: lostClientHangup},
	)
}

// hangupOriginal sends the slow variant (the case needs it: NeedSlow)
// under a fresh key k through a chaos proxy that hangs up halfway through
// its duration, then waits until the handler has had its time. The
// caller closes pr (set even with bad); bad is the verdict when the
// hang-up did not fall inside the handler (the proxy did not cut it, or
// the upstream answered first).
func (e *Env) hangupOriginal(ctx context.Context) (pr *proxied, k string, body []byte, first wire.Resp, bad *Verdict) {
	body, v, _ := e.Variant(apispec.VariantSlow)
	after := v.Duration / 2
	pr, err := e.viaProxy(fmt.Sprintf("hangup:attempt=1,after=%s", after))
	if err != nil {
		x := e.Inconclusive("chaos proxy: " + err.Error())
		return nil, "", nil, first, &x
	}
	k = e.NewKey()
	first = pr.Send(ctx, Req{Label: fmt.Sprintf("slow original (%s); the proxy hangs up %s after sending it", v.Duration, after), Key: k, Body: body})
	if !pr.answerLost(first) {
		x := pr.Inconclusive("the proxy did not hang up: " + first.String())
		return pr, k, body, first, &x
	}
	up := pr.upstreamSettled(ctx, k)
	switch {
	case len(up) == 0:
		x := pr.Inconclusive("the proxy recorded no attempt under the key")
		return pr, k, body, first, &x
	case up[0].Error == "":
		x := pr.Missed(fmt.Sprintf("the upstream answered (%d) within %s, before the hang-up: the slow variant did not keep the handler running", up[0].Status, after))
		return pr, k, body, first, &x
	}
	// A server that ignores the hang-up still runs the handler to its
	// end: the retries wait for it, and half as much again (a retry while
	// it runs is lost/retry-storm's; one past a lease shorter than the
	// slow variant would take the key over, legally).
	if err := clock.Until(ctx, first.Start.Add(v.Duration+v.Duration/2)); err != nil {
		x := pr.Inconclusive(err.Error())
		return pr, k, body, first, &x
	}
	return pr, k, body, first, nil
}

func lostClientHangup(ctx context.Context, e *Env) Verdict {
	if !e.HasOracle() {
		return e.Unverifiable("the hang-up keeps the original's answer (and its created id) from everyone: only an oracle (sql:, a list or counter url, downstream:, events:) can count its execution")
	}
	pr, k, body, first, bad := e.hangupOriginal(ctx)
	if pr != nil {
		defer pr.close()
	}
	if bad != nil {
		return *bad
	}
	rs := pr.untilDone(ctx, "retry", k, body)
	v := pr.judgeLost(ctx, k, "", first, rs)
	if v.Status != Fail {
		return v
	}
	if x, ok := e.abandonedDownstream(ctx, k); ok {
		return x
	}
	// The client's answer ended at the hang-up; the handler did not: it
	// may still have been running when a retry came. A retry answered
	// past the declared lease − margin may then have legally taken over
	// its claim (a stalled machine stretches the slow run past the wait).
	running := first
	running.End = time.Time{}
	if x := e.leaseTakeover(v, running, rs...); x != nil {
		return *x
	}
	return v
}

// abandonedDownstream: when the oracle counts the downstream double's
// calls and the extra execution is a call the API gave up while the
// double held its answer back (the hang-up cancelled the handler's
// provider call, e.g. under the request's context, the slow window being
// the double's delay), nothing shows whether a provider executed that
// call: the API got no answer, failed, and the retry called again. Not a
// proof of a second execution, so inconclusive; ok is false otherwise
// (every counted call was answered: the failure stands).
func (e *Env) abandonedDownstream(ctx context.Context, k string) (Verdict, bool) {
	o := e.Target.OracleOf(e.Op)
	if e.double == nil || o == nil || o.Downstream == "" {
		return Verdict{}, false
	}
	n, err := e.Executions(ctx, k)
	if err != nil {
		return Verdict{}, false
	}
	gone := 0
	for _, c := range e.double.Journal(k) {
		if c.Route == o.Downstream && c.Abandoned {
			gone++
		}
	}
	if gone == 0 || n-gone != 1 {
		return Verdict{}, false
	}
	return e.Inconclusive(fmt.Sprintf("downstream %s counted %d calls of the key, %d of them given up by the API while the double held its answer back (the hang-up cancelled the handler's provider call): only 1 was answered, and whether a provider executed the abandoned one is unknown", o.Downstream, n, gone)), true
}

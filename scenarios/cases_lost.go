package scenarios

import (
	"context"
	"fmt"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// LOST: the request reached the server and the answer was lost on the way
// back (or the request itself was cut); the client retries with the same
// key. These cases put an in-process chaos proxy between the suite and the
// target, because only a per-request proxy can let the upstream commit and
// then drop the response (draft §1's motivation; feasibility §5).
func init() {
	register(
		Case{Meta: Meta{ID: "lost/dropped-response-retry", Family: "lost", Requirements: []string{"IK-LOST-1"}, Level: Must,
			Requirement: "draft §1 (motivation), Stripe: a client that lost the response retries with the same key and gets the original outcome; the operation executes once.",
			Explanation: "The proxy lets the first request commit and drops its response (over gRPC it ends the call UNAVAILABLE, as a lost connection does); the retry gets the committed result (same created id) and the oracle shows one execution.",
			Needs:       []Need{NeedEffects}},
			PerOperation: true, Run: lostDroppedResponse},
		Case{Meta: Meta{ID: "lost/truncated-request", Family: "lost", Requirements: []string{"IK-LOST-2"}, Level: Should,
			Requirement: "Practice: a request aborted mid-body (the server never received it whole) leaves no key record; the retry executes once.",
			Explanation: "The proxy sends the headers and half the body, then closes; the full retry with the same key succeeds and executes exactly once.",
			Needs:       []Need{NeedEffects}},
			PerOperation: true, Unfit: needs[wire.RawBodies]("the request is sent whole inside the carrier's envelope or message (GraphQL, JSON-RPC: a cut body is no call at all; gRPC: a unary method is called with its whole request message: the message is length-prefixed and decoded before the method runs (grpc-go's generated handler decodes it first and returns the error), so a cut message never reaches a handler that could keep its key (TestGRPCCutMessageNeverRuns))"), Run: lostTruncatedRequest},
		Case{Meta: Meta{ID: "lost/retry-storm", Family: "lost", Requirements: []string{"IK-LOST-3"}, Level: Must,
			Requirement: "Practice: a retry storm (k jittered retries, some overlapping the original) still gives exactly one execution.",
			Explanation: "A slow request whose response the proxy drops is retried 3 times at once while still in flight and twice more late in it (at 75% and 90% of the slow duration: a lease shorter than the work lapses before them), then until done: one execution, one created id, and the client ends with it.",
			Needs:       []Need{NeedSlow, NeedEffects}},
			PerOperation: true, Run: lostRetryStorm},
	)
}

func lostDroppedResponse(ctx context.Context, e *Env) Verdict {
	pr, err := e.viaProxy("drop-response:attempt=1")
	if err != nil {
		return e.Inconclusive("chaos proxy: " + err.Error())
	}
	defer pr.close()
	k := e.NewKey()
	first := pr.Send(ctx, Req{Label: "original (the proxy drops the response)", Key: k})
	if !pr.answerLost(first) {
		return e.Inconclusive("the proxy did not drop the response: " + first.String())
	}
	up := pr.upstreamSettled(ctx, k)
	committed, ok := pr.committedID(up)
	if !ok {
		return e.Inconclusive(fmt.Sprintf("the original did not succeed upstream: %+v", up))
	}
	return pr.judgeLost(ctx, k, committed, first, pr.untilDone(ctx, "retry", k, nil))
}

func lostTruncatedRequest(ctx context.Context, e *Env) Verdict {
	if len(e.Op.Body) < 2 {
		return e.Skip("the operation has no body to truncate")
	}
	pr, err := e.viaProxy("truncate-request:attempt=1")
	if err != nil {
		return e.Inconclusive("chaos proxy: " + err.Error())
	}
	defer pr.close()
	k := e.NewKey()
	first := pr.Send(ctx, Req{Label: "original (the proxy sends half the body, then closes)", Key: k})
	if first.Err == nil {
		return e.Inconclusive("the proxy did not cut the request: " + first.String())
	}
	rs := pr.untilDone(ctx, "full retry", k, nil)
	last := rs[len(rs)-1]
	if !last.OK() {
		return e.Unmet("the retry executes (the cut request left no record)", fmt.Sprintf("after %d retries: %s", len(rs), last.String()))
	}
	n, how, _, err := pr.Effects(ctx, k, rs...)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	if n != 1 {
		// A retry that timed out may have executed; one a stalled server
		// read after that execution's record expired executes again.
		return e.inTTL(e.Fail("exactly 1 execution", fmt.Sprintf("%d executions (%s)", n, how)), first, rs...)
	}
	return e.Pass(fmt.Sprintf("cut request, then %s; 1 execution (%s)", last.String(), how))
}

func lostRetryStorm(ctx context.Context, e *Env) Verdict {
	pr, err := e.viaProxy("drop-response:attempt=1")
	if err != nil {
		return e.Inconclusive("chaos proxy: " + err.Error())
	}
	defer pr.close()
	body, _, _ := e.Variant(apispec.VariantSlow)
	k, first, storm := pr.storm(ctx, body)
	if !pr.answerLost(first) {
		return e.Inconclusive("the proxy did not drop the response: " + first.String())
	}
	if !stormOverlapped(first, storm) {
		return e.Missed("could not overlap: every storm retry was sent after the original completed")
	}
	committed, ok := pr.committedID(pr.upstreamSettled(ctx, k))
	if !ok {
		// Nothing committed yet is fine only if a storm retry executed it.
		committed = ""
	}
	rs := append(storm, pr.untilDone(ctx, "retry after the storm", k, body)...)
	return pr.judgeLost(ctx, k, committed, first, rs)
}

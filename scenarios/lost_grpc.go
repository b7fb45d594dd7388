package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/target"
)

// lostByDeadline is lost/dropped-response-retry over gRPC, where no proxy
// cuts an HTTP/2 stream yet: the client loses the answer itself, as a
// gRPC client does most often, by a deadline. The slow variant's call
// gets a deadline of a third of its duration (DEADLINE_EXCEEDED on the
// client while the server executes); once the call has had its time, and
// half as much again so that a server which completes it has (a retry
// while it still runs is the in-flight cases' business), the client
// retries with the same key until a final answer. The retry must
// end with the result, one created id and one execution in all: whether
// the server completed the charge and replays it, or abandoned it at the
// deadline and executes it now.
func (e *Env) lostByDeadline(ctx context.Context) Verdict {
	body, v, ok := e.Variant(target.VariantSlow)
	if !ok || v.Duration <= 0 {
		return e.Skip("over gRPC the answer is lost by a client deadline inside the slow variant: the operation declares none")
	}
	k, deadline := e.NewKey(), v.Duration/3
	dctx, cancel := context.WithTimeout(ctx, deadline)
	first := e.Send(dctx, Req{Label: fmt.Sprintf("slow original (%s), deadline %s: its answer is lost", v.Duration, deadline), Key: k, Body: body})
	cancel()
	if first.Err == nil {
		return e.Inconclusive(fmt.Sprintf("the slow original answered within its %s deadline: %s", deadline, first.String()))
	}
	select {
	case <-time.After(time.Until(first.Start.Add(v.Duration + v.Duration/2))):
	case <-ctx.Done():
	}
	rs := e.untilDone(ctx, "retry", k, body)
	last := rs[len(rs)-1]
	var verdict Verdict
	if ids := e.DistinctIDs(rs...); len(ids) > 1 {
		verdict = e.Fail("one created resource", fmt.Sprintf("%d distinct ids: %s", len(ids), strings.Join(ids, ", ")))
	} else if !last.OK() {
		verdict = e.Unmet("the result of the call whose answer was lost", fmt.Sprintf("after %d retries: %s", len(rs), last.String()))
	} else if n, how, _, err := e.Effects(ctx, k, rs...); err != nil {
		return e.Inconclusive(err.Error())
	} else if n != 1 {
		verdict = e.Fail("exactly 1 execution", fmt.Sprintf("%d executions (%s); the retry got %s", n, how, last.String()))
	} else {
		verdict = e.Pass(fmt.Sprintf("answer lost at the %s deadline; %d retries; got %s; 1 execution (%s)", deadline, len(rs), last.String(), how))
	}
	return e.inTTL(verdict, first, rs...)
}

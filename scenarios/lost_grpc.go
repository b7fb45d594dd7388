package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// Over gRPC no proxy cuts an HTTP/2 stream yet: the client loses the
// answer itself, as a gRPC client does most often, by a deadline. The
// slow variant's call gets a deadline inside its duration
// (DEADLINE_EXCEEDED on the client while the server executes); the
// client then retries with the same key. The retries must end with the
// result, one created id and one execution in all: whether the server
// completed the charge and replays it, or abandoned it at the deadline
// and executes it on a retry.

// lostSlow is the slow variant a lost-answer case over gRPC needs, or
// the skip verdict when the operation declares none.
func (e *Env) lostSlow() (body []byte, v apispec.Variant, skip *Verdict) {
	body, v, ok := e.Variant(apispec.VariantSlow)
	if !ok || v.Duration <= 0 {
		s := e.Skip("over gRPC the answer is lost by a client deadline inside the slow variant: the operation declares none")
		return nil, v, &s
	}
	return body, v, nil
}

// sendLost sends the slow original under k with a deadline of deadline:
// its answer is lost unless the server answered first.
func (e *Env) sendLost(ctx context.Context, k string, body []byte, v apispec.Variant, deadline time.Duration) wire.Resp {
	dctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	return e.Send(dctx, Req{Label: fmt.Sprintf("slow original (%s), deadline %s: its answer is lost", v.Duration, deadline), Key: k, Body: body})
}

// lostByDeadline is lost/dropped-response-retry over gRPC: the original
// with a deadline of a third of the slow duration; once it has had its
// time, and half as much again so that a server which completes it has (a
// retry while it still runs is lostStormByDeadline's), the retries until
// a final answer.
func (e *Env) lostByDeadline(ctx context.Context) Verdict {
	body, v, skip := e.lostSlow()
	if skip != nil {
		return *skip
	}
	k, deadline := e.NewKey(), v.Duration/3
	first := e.sendLost(ctx, k, body, v, deadline)
	if first.Err == nil {
		return e.Inconclusive(fmt.Sprintf("the slow original answered within its %s deadline: %s", deadline, first.String()))
	}
	select {
	case <-time.After(time.Until(first.Start.Add(v.Duration + v.Duration/2))):
	case <-ctx.Done():
	}
	return e.judgeLostByDeadline(ctx, k, deadline, first, e.untilDone(ctx, "retry", k, body))
}

// lostStormByDeadline is lost/retry-storm over gRPC: the original with a
// deadline of half the slow duration and, once it is in flight
// (startInFlight), stormRetries same-key retries 20ms apart, sent while
// the server still runs it; then the retries until a final answer. As
// the storm over HTTP does, it tries again with a fresh key, at most
// overlapAttempts times, when the original answered (a stall) or no retry
// overlapped it.
func (e *Env) lostStormByDeadline(ctx context.Context) Verdict {
	body, v, skip := e.lostSlow()
	if skip != nil {
		return *skip
	}
	deadline := v.Duration / 2
	var (
		k     string
		first wire.Resp
		storm []wire.Resp
	)
	// The server runs the original for the slow duration from its start:
	// a retry sent before then overlapped it.
	overlapped := func() bool {
		return slices.ContainsFunc(storm, func(r wire.Resp) bool { return r.SentAt().Before(first.Start.Add(v.Duration)) })
	}
	for attempt := 1; attempt <= overlapAttempts && ctx.Err() == nil; attempt++ {
		k = e.NewKey()
		dctx, cancel := context.WithTimeout(ctx, deadline)
		wait := e.startInFlight(dctx, k, Req{Label: fmt.Sprintf("slow original (%s), deadline %s: its answer is lost", v.Duration, deadline), Key: k, Body: body}, v.Duration)
		storm = make([]wire.Resp, stormRetries)
		var wg sync.WaitGroup
		for i := range storm {
			wg.Go(func() {
				select {
				case <-time.After(time.Duration(i) * 20 * time.Millisecond):
				case <-ctx.Done():
				}
				storm[i] = e.Send(ctx, Req{Label: fmt.Sprintf("storm retry %d", i+1), Key: k, Body: body})
			})
		}
		wg.Wait()
		first = wait()
		cancel()
		if first.Err != nil && overlapped() {
			break
		}
	}
	if first.Err == nil {
		return e.Inconclusive(fmt.Sprintf("the slow original answered within its %s deadline: %s", deadline, first.String()))
	}
	if !overlapped() {
		return e.Missed("could not overlap: every storm retry was sent after the original's slow duration")
	}
	rs := append(storm, e.untilDone(ctx, "retry after the storm", k, body)...)
	return e.judgeLostByDeadline(ctx, k, deadline, first, rs)
}

// judgeLostByDeadline: the retries rs of the original first, whose answer
// was lost at deadline, end with the result, one created id and one
// execution (within TTL − margin of the original, see inTTL).
func (e *Env) judgeLostByDeadline(ctx context.Context, k string, deadline time.Duration, first wire.Resp, rs []wire.Resp) Verdict {
	last := rs[len(rs)-1]
	var verdict Verdict
	if ids := e.DistinctIDs(rs...); len(ids) > 1 {
		verdict = e.Fail("one created resource", fmt.Sprintf("%d distinct ids: %s", len(ids), strings.Join(ids, ", ")))
	} else if !last.OK() {
		verdict = e.Unmet("the result of the call whose answer was lost", fmt.Sprintf("after %d retries: %s", len(rs), last.String()))
	} else if n, how, _, err := e.Effects(ctx, k, rs...); err != nil {
		return e.Inconclusive(err.Error())
	} else if n != 1 {
		verdict = e.Fail("exactly 1 execution", fmt.Sprintf("%d executions (%s); the last retry got %s", n, how, last.String()))
	} else {
		verdict = e.Pass(fmt.Sprintf("answer lost at the %s deadline; %d retries; got %s; 1 execution (%s)", deadline, len(rs), last.String(), how))
	}
	return e.inTTL(verdict, first, rs...)
}

package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// burstRounds runs all the profile's rounds of same-key bursts, each
// under a fresh key, and reports the worst round (a narrow race may show
// in any of them); with bases the requests of each burst are spread over
// those replicas (replicas/burst-across).
func (e *Env) burstRounds(ctx context.Context, bases ...string) Verdict {
	rounds, size := e.Profile.Burst()
	rounds *= e.inProcessRounds(bases)
	b := e.newBurster(size, bases...)
	defer b.close()
	where := ""
	if len(bases) > 0 {
		where = fmt.Sprintf(" over %d replicas", len(bases))
	}
	var worst Verdict
	tally := map[string]int{}
	done := 0
	for round := 1; round <= rounds && ctx.Err() == nil; round++ {
		// The first round rides the slow variant, which keeps the whole
		// burst inside one flight (a lock that ignores in-flight records
		// shows); the others use the normal body, back to back, so that a
		// narrow check-then-insert window gets several chances.
		body := e.Op.Body
		if sb, _, ok := e.Variant(apispec.VariantSlow); ok && round == 1 {
			body = sb
		}
		mark := e.exchangeMark()
		k := e.NewKey()
		rs, how := b.send(ctx, k, body, fmt.Sprintf("round %d/%d, burst", round, rounds))
		v := e.judgeBurst(ctx, k, fmt.Sprintf("round %d of %d%s, %s: ", round, rounds, where, how), rs)
		tally[string(v.Status)]++
		done++
		reported := round == 1 || !worse(worst, v) // the last of the worst
		if reported {
			worst = v
		}
		e.keepReportedRound(bases, mark, reported)
	}
	summary := fmt.Sprintf("%d of %d rounds of %d same-key requests%s: %s", done, rounds, size, where, formatCounts(tally))
	if err := ctx.Err(); err != nil && worst.Status != Fail {
		return e.Inconclusive(fmt.Sprintf("cut short before the %d rounds were done: %v (%s)", rounds, err, summary))
	}
	if worst.Status == Pass {
		worst.Observed = summary + ", 1 execution each; last " + worst.Observed
	} else {
		worst.Observed = summary + "; worst " + worst.Observed
		if worst.Reason != "" {
			worst.Reason = summary + "; worst: " + worst.Reason
		}
	}
	return worst
}

// burst sends size requests under key k, released together by a barrier
// over c's warmed connections; with bases, request i goes to replica
// i mod len(bases).
func (e *Env) burst(ctx context.Context, c wire.Carrier, k string, size int, body []byte, label string, bases ...string) []wire.Resp {
	start := make(chan struct{})
	rs := make([]wire.Resp, size)
	var wg sync.WaitGroup
	for i := range rs {
		wg.Go(func() {
			<-start
			r := Req{Label: fmt.Sprintf("%s %d", label, i+1), Key: k, Body: body, carrier: c}
			if len(bases) > 0 {
				r.Base = bases[i%len(bases)]
				r.Label += fmt.Sprintf(" on replica %d", i%len(bases)+1)
			}
			rs[i] = e.Send(ctx, r)
		})
	}
	close(start)
	wg.Wait()
	return rs
}

// judgeBurst judges a same-key burst rs under k: exactly one execution
// and one created resource, each answer the success/replay or an
// in-flight conflict.
func (e *Env) judgeBurst(ctx context.Context, k, prefix string, rs []wire.Resp) Verdict {
	statuses := map[string]int{}
	var okResp, failed *wire.Resp
	for i := range rs {
		if rs[i].Err != nil {
			statuses["error"]++
			if failed == nil {
				failed = &rs[i]
			}
			continue
		}
		statuses[strconv.Itoa(rs[i].Status)]++
		if rs[i].OK() && okResp == nil {
			okResp = &rs[i]
		}
	}
	ids := e.DistinctIDs(rs...)
	n, how, _, err := e.Effects(ctx, k, rs...)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	observed := fmt.Sprintf("%s%d executions (%s), %d distinct ids, statuses %s", prefix, n, how, len(ids), formatCounts(statuses))
	if n > 1 || len(ids) > 1 {
		observed += burstAdvice(n, len(rs))
		return e.inTTL(e.Fail("exactly 1 execution and 1 created resource", observed), spanOf(rs), rs...)
	}
	if v := e.lostConn(rs...); v != nil {
		return *v // the count is right, but a lost request's answer is unknown
	}
	if failed != nil {
		// A transport error is no answer of the API's: what that request
		// would have got (a replay, a conflict, an execution not yet
		// counted) is unknown, so the burst is not judged.
		return e.Inconclusive(fmt.Sprintf("%d of %d requests of the burst got no answer (%s): %s", statuses["error"], len(rs), failed.String(), observed))
	}
	if okResp == nil {
		return e.Inconclusive("no request of the burst succeeded: " + observed)
	}
	if n == 0 {
		// A success the evidence did not count says nothing of the race.
		return e.Inconclusive("the evidence counted no execution behind the burst's success: " + observed)
	}
	expected := fmt.Sprintf("each response the success/replay or an in-flight conflict %v", e.Profile.InFlightStatus)
	var shed, off *wire.Resp
	reached := 0
	for i, r := range rs {
		switch {
		case r.OK() && e.replayOf(*okResp, r, n, how), r.StatusIn(e.Profile.InFlightStatus):
			reached++
		case r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable:
			shed = &rs[i] // load shedding before the idempotency layer (trap C11)
		default:
			reached++
			if off == nil {
				off = &rs[i]
			}
		}
	}
	if reached < 2 && shed != nil {
		// A shedder let at most one request through: nothing raced.
		return e.Missed("the burst was shed before it could race: " + observed + "; e.g. " + shed.String())
	}
	if shed != nil {
		observed += "; shed load (not judged): " + shed.String()
	}
	if off != nil {
		// One execution: only the answer is off, and which answer an
		// in-flight duplicate gets is IK-CONCURRENT-1's SHOULD.
		return e.inTTL(e.shouldAside(expected, observed+"; e.g. "+off.String(), "concurrent/in-flight-conflict"), spanOf(rs), rs...)
	}
	return e.Pass(observed)
}

// burstAdvice is what a burst's count of n executions of size requests
// points to: each executed, the key may not be honoured at all (a
// sequential retry, replay/single-execution, tells it from a claim that
// is not atomic); some, the claim is not atomic.
func burstAdvice(n, size int) string {
	if n >= size {
		return "; every request of the burst executed: either the key is not honoured on this operation at all (is the field read, under this spelling? is the operation behind the idempotency layer? replay/single-execution tells: it retries after the first request has finished) or its claim is not atomic"
	}
	return "; to fix: claim the key atomically before executing (insert-if-absent under a lock, or a unique constraint), not a lookup and later a store"
}

// severity orders verdicts from the best to the worst.
var severity = map[Status]int{Pass: 0, Skip: 1, Unverifiable: 2, Inconclusive: 3, Warn: 4, Fail: 5}

// worse reports whether a is a worse verdict than b.
func worse(a, b Verdict) bool { return severity[a.Status] > severity[b.Status] }

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/wire"
)

// Probes for behaviour seen in real implementations that the families'
// first cases do not reach: a burst racing an expired record's cleanup,
// an in-flight lock that lapses while its request still runs. (The keyless
// request that executes is missing/rejected's; repeated bursts are
// concurrent/same-key-burst's rounds.)
func init() {
	register(
		Case{Meta: Meta{ID: "expiry/expired-key-burst", Family: "expiry", Requirements: []string{"IK-CONCURRENT-2", "IK-EXPIRY-2"}, Level: Must,
			Requirement: "All sources (IK-CONCURRENT-2): N parallel identical requests with the same key cause exactly one execution; draft §2.3 lets a key expire, and the purge of an expired record racing the new claims must not let two of them through.",
			Explanation: "A burst of same-key requests released together right after the key expired (riding the slow variant where configured) executes at most once (a fresh execution, or a replay/409 where the record lingers), never twice.",
			Needs:       []Need{NeedTTL, NeedEffects}},
			Proof:        ByFresh | ByInFlight,
			PerOperation: true, Skips: expiryWaitTooLong, Run: expiryExpiredKeyBurst},
		Case{Meta: Meta{ID: "concurrent/in-flight-offsets", Family: "concurrent", Requirements: []string{"IK-CONCURRENT-1", "IK-CONCURRENT-2", "IK-LEASE-3"}, Level: Must,
			Requirement: "draft §2.6/§2.7: a request with the same key while the original is still being processed gets a conflict (409), and never executes again (IK-CONCURRENT-2) — for the whole of the original's run, not only its first milliseconds (trap C17: a lock that lapses before the request ends).",
			Explanation: "Duplicates sent at the start, the middle and the last quarter of the slow original each get the in-flight status (or, where blocking is allowed, the replay), and none executes again.",
			Needs:       []Need{NeedSlow, NeedEffects}},
			PerOperation: true, MinTTL: ttlOffsets, Run: concurrentInFlightOffsets},
	)
}

func expiryExpiredKeyBurst(ctx context.Context, e *Env) Verdict {
	if v := e.tooLongToWait(); v != nil {
		return *v
	}
	_, size := e.Profile.Burst()
	// The slow variant (where configured) keeps the first execution after
	// expiry in flight while the rest of the burst arrives: a reclaim of
	// the expired record without an in-flight marker lets them all run.
	body := e.Op.Body
	if sb, _, ok := e.Variant(apispec.VariantSlow); ok {
		body = sb
	}
	k := e.NewKey()
	first, bad := e.original(ctx, k, body)
	if bad != nil {
		return *bad
	}
	before, _, _, err := e.Effects(ctx, k, first)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	expired := first.End.Add(e.Target.TTL + e.Profile.Grace)
	if err := clock.Until(ctx, expired); err != nil {
		return e.Inconclusive(err.Error())
	}
	// Connections are opened only now: idle for a whole TTL, they may
	// have been closed by the server.
	b := e.newBurster(size)
	defer b.close()
	rs, sent := b.send(ctx, k, body, "after expiry, burst")
	statuses := map[string]int{}
	var errs, fives int
	for _, r := range rs {
		switch {
		case r.Err != nil:
			statuses["error"]++
			errs++
		default:
			statuses[strconv.Itoa(r.Status)]++
			if r.Is5xx() && r.Status != http.StatusServiceUnavailable {
				fives++
			}
		}
	}
	all, how, _, err := e.Effects(ctx, k, append([]wire.Resp{first}, rs...)...)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	n := all - before
	origID := e.CreatedID(first)
	var fresh []string
	for _, id := range e.DistinctIDs(rs...) {
		if id != origID {
			fresh = append(fresh, id)
		}
	}
	observed := fmt.Sprintf("%d same-key requests (%s%s) released %s after the original completed (TTL %s + grace %s): %d executions after expiry (%s), %d new ids, statuses %s",
		size, sent, slowNote(body, e.Op.Body), earliest(rs).Start.Sub(first.End).Round(time.Millisecond), e.Target.TTL, e.Profile.Grace, n, how, len(fresh), formatCounts(statuses))
	switch {
	case n > 1 || len(fresh) > 1:
		v := e.Fail("at most 1 execution among the requests racing the expired record", observed)
		if x := e.leaseTakeover(v, spanOf(rs), rs...); x != nil {
			return *x // the first new execution stalled past the lease
		}
		return v
	case errs == len(rs):
		return e.Inconclusive("no request of the burst got an answer: " + observed)
	case e.noClaimRaced(n, rs):
		// A mismatch or in-flight answer to every request, and no
		// execution: the expired record was never raced.
		return e.Inconclusive(fmt.Sprintf("every request of the burst got the profile's %s answer and none executed: no claim of the expired key was raced: %s", e.signal(rs[0]), observed))
	case fives > 0:
		return e.shouldAside("a fresh execution, a replay or an idempotency error for each request, never a 5xx", observed, "concurrent/in-flight-conflict")
	}
	return e.Pass(observed)
}

// slowNote says, for the evidence, when a burst rode the slow variant.
func slowNote(body, normal []byte) string {
	if string(body) == string(normal) {
		return ""
	}
	return ", the slow variant"
}

func concurrentInFlightOffsets(ctx context.Context, e *Env) Verdict {
	var v Verdict
	var shift time.Duration
	for attempt := 1; attempt <= overlapAttempts && ctx.Err() == nil; attempt++ {
		var placed bool
		var late time.Duration
		if v, placed, late = e.offsetsAttempt(ctx, attempt, shift); placed || v.Status == Fail || v.Status == Warn {
			return v
		}
		// A server slower than its declared slow variant runs late on every
		// attempt: the next one sends its duplicates that much later. The
		// least lateness seen is that persistent part (a one-off stall
		// would push the next attempt's duplicates past the original).
		if attempt == 1 {
			shift = late
		}
		shift = min(shift, late)
	}
	if ctx.Err() != nil && v.Status == "" {
		return e.Inconclusive(ctx.Err().Error())
	}
	return v
}

package scenarios

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/wire"
)

// The TTL edge: a store whose claim fails on an expired record not yet
// purged, and whose re-read then skips it as expired, lets every same-key
// request at the edge run (granit VULN-301). A burst a grace after the
// TTL misses that window, so this case sweeps it: one key per point,
// points spread from TTL − margin after the original's start (a TTL
// counted from the claim) to TTL + grace after its end (one counted from
// completion), a same-key burst at each, and at most one execution per key
// at every point.
func init() {
	register(
		Case{Meta: Meta{ID: "expiry/edge-burst", Family: "expiry", Requirements: []string{"IK-CONCURRENT-2", "IK-EXPIRY-5"}, Level: Must,
			Requirement: "All sources (IK-CONCURRENT-2): parallel identical requests with the same key cause at most one execution — also at the instant the key expires (granit VULN-301: the claim fails on the expired record, the re-read misses it, and both retries run).",
			Explanation: "Keys stored together, then a same-key burst for each at its own point from TTL − margin (counted from the request) to TTL + grace (counted from the answer): each burst executes at most once, a replay before the edge, one fresh execution after it.",
			Needs:       []Need{NeedTTL, NeedEffects}},
			Proof:        ByFresh | ByInFlight,
			PerOperation: true, Skips: expiryWaitTooLong, MinTTL: ttlPastMargin,
			Unfit: notForFirstSent("a key past its retention is refused by its first_sent: past the edge nothing can execute, so there is no edge to race"), Run: expiryEdgeBurst},
	)
}

// edgePoints is how many points (keys) the sweep has, and edgeBurstSize
// the same-key requests at each: points close enough that a window of a
// few hundred milliseconds after the TTL holds one whatever the margin
// and grace, bursts big enough to race.
const (
	edgePoints    = 8
	edgeBurstSize = 4
)

// edgePoint is one key of the sweep: its original, when its burst is due
// and what the burst got.
type edgePoint struct {
	key    string
	first  wire.Resp
	before int // executions counted after the original
	at     time.Time
	rs     []wire.Resp
	how    string
}

func expiryEdgeBurst(ctx context.Context, e *Env) Verdict {
	if v := e.tooLongToWait(); v != nil {
		return *v
	}
	ttl, margin, grace := e.Target.TTL, e.Profile.Margin, e.Profile.Grace
	points := make([]*edgePoint, edgePoints)
	for i := range points {
		p := &edgePoint{key: e.NewKey()}
		var bad *Verdict
		if p.first, bad = e.original(ctx, p.key, nil); bad != nil {
			return *bad
		}
		n, _, _, err := e.Effects(ctx, p.key, p.first)
		if err != nil {
			return e.Inconclusive(err.Error())
		}
		p.before = n
		points[i] = p
	}
	for i, p := range points {
		from, to := p.first.Start.Add(ttl-margin), p.first.End.Add(ttl+grace)
		p.at = from.Add(to.Sub(from) * time.Duration(i) / time.Duration(edgePoints-1))
	}
	var wg sync.WaitGroup
	for i, p := range points {
		wg.Go(func() {
			b := e.newBurster(edgeBurstSize)
			defer b.close()
			if clock.Until(ctx, p.at) != nil {
				return
			}
			p.rs, p.how = b.send(ctx, p.key, e.Op.Body, fmt.Sprintf("point %d of %d, burst", i+1, edgePoints))
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return e.Inconclusive(ctx.Err().Error())
	}
	var notes []string
	var before, after bool // a burst sent before the edge, one after it
	signalled := 0         // points whose every answer was a signal the case does not take
	for i, p := range points {
		if len(p.rs) == 0 {
			return e.Inconclusive(fmt.Sprintf("point %d sent no burst", i+1))
		}
		sent := earliest(p.rs).Start
		all, how, _, err := e.Effects(ctx, p.key, append([]wire.Resp{p.first}, p.rs...)...)
		if err != nil {
			return e.Inconclusive(err.Error())
		}
		n := all - p.before
		if e.noClaimRaced(n, p.rs) {
			// A mismatch or in-flight answer to every request, and no
			// execution: this point raced nothing, on either side of the
			// edge.
			signalled++
		} else {
			before = before || sent.Before(p.first.Start.Add(ttl))
			after = after || sent.After(p.first.End.Add(ttl))
		}
		fresh := 0
		for _, id := range e.DistinctIDs(p.rs...) {
			if id != e.CreatedID(p.first) {
				fresh++
			}
		}
		statuses := map[string]int{}
		for _, r := range p.rs {
			statuses[statusOf(r)]++
		}
		note := fmt.Sprintf("point %d at TTL %+dms (%s): %d executions (%s), %d new ids, %s", i+1, sent.Sub(p.first.Start.Add(ttl)).Milliseconds(), p.how, n, how, fresh, formatCounts(statuses))
		notes = append(notes, note)
		if n > 1 || fresh > 1 {
			v := e.Fail("at most 1 execution among the same-key requests at every point across the TTL edge", strings.Join(notes, "; "))
			if x := e.leaseTakeover(v, spanOf(p.rs), p.rs...); x != nil {
				return *x
			}
			return v
		}
	}
	observed := strings.Join(notes, "; ")
	switch {
	case (!before || !after) && signalled > 0:
		return e.Inconclusive(fmt.Sprintf("%d of %d points got only the profile's mismatch or in-flight answer and executed nothing, so the sweep raced no claim on one side of the TTL edge: %s", signalled, len(points), observed))
	case !before || !after:
		return e.Missed("the sweep did not straddle the TTL edge (a stall moved its bursts): " + observed)
	}
	return e.Pass(observed)
}

package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/target"
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
	if sb, _, ok := e.Variant(target.VariantSlow); ok {
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

// inFlightOffsets are where, as fractions of the slow variant's declared
// duration after it was sent, concurrent/in-flight-offsets sends its
// duplicates: right once it is in flight, halfway, in the last quarter.
var inFlightOffsets = []struct {
	name string
	at   float64
}{{"start", 0}, {"middle", 0.5}, {"last quarter", 0.8}}

// ttlOffsets is concurrent/in-flight-offsets' MinTTL: its last duplicate
// must be sent inside TTL − margin to be judged.
func ttlOffsets(_ *target.Target, p *target.Profile, op *target.Operation) (time.Duration, string) {
	d := op.Variants[target.VariantSlow].Duration
	last := time.Duration(inFlightOffsets[len(inFlightOffsets)-1].at * float64(d))
	return last + p.Margin, fmt.Sprintf("the duplicate at +%s of the %s slow original is judged only within TTL − margin %s", last, d, p.Margin)
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

// offsetsAttempt runs concurrent/in-flight-offsets once under a fresh key,
// its duplicates shifted by shift. placed is false when a duplicate is not
// shown to have reached the server at its offset of the original's run (a
// stall): that offset proves nothing, the attempt is inconclusive unless
// another offset already decided. late is how much longer than declared
// the original took.
//
// Where a duplicate reached the server is bounded from the client: the
// server saw it no earlier than it was sent, and claimed the original no
// later than the declared duration before the original's answer (the
// slow variant runs at least that long). A duplicate at fraction f is
// placed when that bound puts it at least f·d − d/10 into the run: a lock
// that lapses late in the run meets it there. (A duplicate answered 409
// because a stalled server claimed the original late probed an early
// moment: it passed a lock that lapses after 1 s.)
func (e *Env) offsetsAttempt(ctx context.Context, attempt int, shift time.Duration) (v Verdict, placed bool, late time.Duration) {
	body, sv, _ := e.Variant(target.VariantSlow)
	d := sv.Duration
	k := e.NewKey()
	label := fmt.Sprintf("slow original (%s)", d)
	if attempt > 1 {
		label += fmt.Sprintf(", attempt %d", attempt)
	}
	sent := time.Now()
	wait := e.startInFlight(ctx, k, Req{Label: label, Key: k, Body: body}, d)
	dups := make([]wire.Resp, len(inFlightOffsets))
	var wg sync.WaitGroup
	for i, off := range inFlightOffsets {
		wg.Go(func() {
			at := time.Duration(off.at * float64(d))
			if err := clock.Until(ctx, sent.Add(at+shift)); err != nil {
				dups[i] = wire.Resp{Err: err}
				return
			}
			dups[i] = e.Send(ctx, Req{Label: fmt.Sprintf("duplicate at the %s (+%s)", off.name, at), Key: k, Body: body})
		})
	}
	wg.Wait()
	slow := wait()
	if !slow.OK() {
		return e.Inconclusive("the slow variant did not succeed: " + slow.String()), false, 0
	}
	late = min(max(slow.End.Sub(slow.SentAt())-d, 0), d/2)
	n, how, _, err := e.Effects(ctx, k, append([]wire.Resp{slow}, dups...)...)
	if err != nil {
		return e.Inconclusive(err.Error()), false, late
	}
	expected := fmt.Sprintf("%v while in flight", e.Profile.InFlightStatus)
	if e.Profile.BlockOK {
		expected += fmt.Sprintf(" or the replay within %s", e.Profile.MaxBlock)
	}
	expected += ", at every offset; never a second execution"
	var lines, again, unmet, missed []string
	var proof []wire.Resp // the duplicates that executed again
	for i, r := range dups {
		off := inFlightOffsets[i].name
		// At least this far into the original's run at the server.
		into := d - slow.End.Sub(r.SentAt())
		line := fmt.Sprintf("%s (sent +%s, ≥ %s into the run, original ran %s): %s", off, r.SentAt().Sub(slow.Start).Round(time.Millisecond), max(into, 0).Round(time.Millisecond), slow.End.Sub(slow.Start).Round(time.Millisecond), r.String())
		if r.Start.IsZero() {
			line = off + ": " + r.String()
		}
		lines = append(lines, line)
		switch {
		case r.Err != nil || !r.SentAt().Before(slow.End):
			missed = append(missed, off)
		case r.OK() && !e.replayOf(slow, r, n, how):
			again = append(again, off)
			proof = append(proof, r)
		case into < time.Duration(inFlightOffsets[i].at*float64(d))-d/10:
			// Not shown to have reached the server at its offset: it
			// probed an earlier moment (a stall on the way, or a server
			// that claimed the original late).
			missed = append(missed, off)
		case r.OK() && !e.Profile.BlockOK:
			// A replay exists only once the original completed at the
			// server: held (forbidden here; concurrent/in-flight-conflict
			// judges that) or sent too late (a client stall). Either way
			// this offset did not probe the running original.
			missed = append(missed, off)
		case r.OK() && r.End.Sub(r.Start) < d/10:
			// The replay came at once: the original had completed when the
			// server saw this duplicate (it was not held), so it arrived
			// late. This offset did not probe the running original.
			missed = append(missed, off)
		case r.OK() && r.End.Sub(r.Start) > e.Profile.MaxBlock:
			unmet = append(unmet, off)
		case r.OK(), e.Profile.InFlightOK(r.Status):
		default:
			unmet = append(unmet, off)
		}
	}
	observed := fmt.Sprintf("%s; %d executions (%s)", strings.Join(lines, "; "), n, how)
	switch {
	// Created ids name the duplicate that executed; the oracle alone only
	// counts, so with a late duplicate it cannot say whose execution it was.
	case (len(again) > 0 && (e.Op.IDPointer != "" || len(missed) == 0)) || (n != 1 && len(missed) == 0):
		at := ""
		if len(again) > 0 {
			at = " (the duplicate at the " + strings.Join(again, ", ") + ")"
		}
		// Judged by when the duplicates were sent (one time rule, inTTL):
		// one that executed again and was sent inside TTL − margin proves
		// the failure, however late it answered.
		return e.inTTL(e.Fail(expected, "a second execution"+at+": "+observed), slow, e.judged(slow, proof, dups)...), true, late
	case n != 1:
		// An extra execution, but duplicates that arrived after the
		// original completed may have caused it (a stall carried them past
		// the TTL, say): not this case's evidence. Try again.
		return e.Missed(fmt.Sprintf("%d executions, and the duplicate at the %s was not shown inside the original's run: not attributable to an in-flight duplicate (%s)", n, strings.Join(missed, ", "), observed)), false, late
	case len(unmet) > 0:
		return e.shouldAside(expected, fmt.Sprintf("unexpected answer at: %s: %s", strings.Join(unmet, ", "), observed), "concurrent/in-flight-conflict"), true, late
	case len(missed) > 0:
		return e.Missed(fmt.Sprintf("could not place the duplicate at its offset of the original's run at: %s (%s)", strings.Join(missed, ", "), observed)), false, late
	}
	return e.Pass(observed), true, late
}

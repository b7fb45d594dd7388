package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
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
			PerOperation: true, Run: expiryExpiredKeyBurst},
		Case{Meta: Meta{ID: "concurrent/in-flight-offsets", Family: "concurrent", Requirements: []string{"IK-CONCURRENT-1", "IK-CONCURRENT-2", "IK-LEASE-3"}, Level: Must,
			Requirement: "draft §2.6/§2.7: a request with the same key while the original is still being processed gets a conflict (409), and never executes again (IK-CONCURRENT-2) — for the whole of the original's run, not only its first milliseconds (trap C17: a lock that lapses before the request ends).",
			Explanation: "Duplicates sent at the start, the middle and the last quarter of the slow original each get the in-flight status (or, where blocking is allowed, the replay), and none executes again.",
			Needs:       []Need{NeedSlow, NeedEffects}},
			PerOperation: true, Run: concurrentInFlightOffsets},
	)
}

func expiryExpiredKeyBurst(ctx context.Context, e *Env) Verdict {
	if v := e.tooLongToWait(); v != nil {
		return *v
	}
	_, size := e.Profile.burst()
	// The slow variant (where configured) keeps the first execution after
	// expiry in flight while the rest of the burst arrives: a reclaim of
	// the expired record without an in-flight marker lets them all run.
	body := e.Op.Body
	if sb, _, ok := e.Variant(VariantSlow); ok {
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
	if err := waitUntil(ctx, expired); err != nil {
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
	all, how, _, err := e.Effects(ctx, k, append([]Resp{first}, rs...)...)
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
		return e.Fail("at most 1 execution among the requests racing the expired record", observed)
	case errs == len(rs):
		return e.Inconclusive("no request of the burst got an answer: " + observed)
	case fives > 0:
		return e.unmetAt(Should, "a fresh execution, a replay or an idempotency error for each request, never a 5xx", observed)
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

func concurrentInFlightOffsets(ctx context.Context, e *Env) Verdict {
	var v Verdict
	for attempt := 1; attempt <= overlapAttempts && ctx.Err() == nil; attempt++ {
		var placed bool
		if v, placed = e.offsetsAttempt(ctx, attempt); placed || v.Status == Fail || v.Status == Warn {
			return v
		}
	}
	if ctx.Err() != nil && v.Status == "" {
		return e.Inconclusive(ctx.Err().Error())
	}
	return v
}

// offsetsAttempt runs concurrent/in-flight-offsets once under a fresh key.
// placed is false when a duplicate could not be sent inside the original's
// run (a stall): that offset proves nothing, the attempt is inconclusive
// unless another offset already decided.
func (e *Env) offsetsAttempt(ctx context.Context, attempt int) (v Verdict, placed bool) {
	body, sv, _ := e.Variant(VariantSlow)
	d := sv.Duration
	k := e.NewKey()
	label := fmt.Sprintf("slow original (%s)", d)
	if attempt > 1 {
		label += fmt.Sprintf(", attempt %d", attempt)
	}
	sent := time.Now()
	wait := e.startInFlight(ctx, k, Req{Label: label, Key: k, Body: body}, d)
	dups := make([]Resp, len(inFlightOffsets))
	var wg sync.WaitGroup
	for i, off := range inFlightOffsets {
		wg.Go(func() {
			at := time.Duration(off.at * float64(d))
			if err := waitUntil(ctx, sent.Add(at)); err != nil {
				dups[i] = Resp{Err: err}
				return
			}
			dups[i] = e.Send(ctx, Req{Label: fmt.Sprintf("duplicate at the %s (+%s)", off.name, at), Key: k, Body: body})
		})
	}
	wg.Wait()
	slow := wait()
	if !slow.OK() {
		return e.Inconclusive("the slow variant did not succeed: " + slow.String()), false
	}
	n, how, _, err := e.Effects(ctx, k, append([]Resp{slow}, dups...)...)
	if err != nil {
		return e.Inconclusive(err.Error()), false
	}
	expected := fmt.Sprintf("%v while in flight", e.Profile.InFlightStatus)
	if e.Profile.BlockOK {
		expected += fmt.Sprintf(" or the replay within %s", e.Profile.MaxBlock)
	}
	expected += ", at every offset; never a second execution"
	var lines, again, unmet, missed []string
	for i, r := range dups {
		off := inFlightOffsets[i].name
		line := fmt.Sprintf("%s (sent +%s, original ran %s): %s", off, r.Start.Sub(slow.Start).Round(time.Millisecond), slow.End.Sub(slow.Start).Round(time.Millisecond), r.String())
		if r.Start.IsZero() {
			line = off + ": " + r.String()
		}
		lines = append(lines, line)
		switch {
		case r.Err != nil || !r.Start.Before(slow.End):
			missed = append(missed, off)
		case r.OK() && !e.replayOf(slow, r, n, how):
			again = append(again, off)
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
		// Judged by when the server can have handled the duplicates (their
		// answers): a stall may carry one past the TTL.
		return e.inTTLAnswered(e.Fail(expected, "a second execution"+at+": "+observed), slow, dups...), true
	case n != 1:
		// An extra execution, but duplicates that arrived after the
		// original completed may have caused it (a stall carried them past
		// the TTL, say): not this case's evidence. Try again.
		return e.Inconclusive(fmt.Sprintf("%d executions, and the duplicate at the %s arrived after the original completed: not attributable to an in-flight duplicate (%s)", n, strings.Join(missed, ", "), observed)), false
	case len(unmet) > 0:
		return e.unmetAt(Should, expected, fmt.Sprintf("unexpected answer at: %s: %s", strings.Join(unmet, ", "), observed)), true
	case len(missed) > 0:
		return e.Inconclusive(fmt.Sprintf("could not place the duplicate inside the original's run at: %s (%s)", strings.Join(missed, ", "), observed)), false
	}
	return e.Pass(observed), true
}

package scenarios

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/wire"
)

// duringSlow sends the slow variant under a fresh key and, once it is in
// flight, calls dup with that key. It returns the key, the slow response
// and dup's. When the original failed, or dup was sent after it completed,
// or (quick: dup should be answered while the original runs) dup's answer
// came after it completed, a stall may have hidden the overlap, so it
// tries again with a fresh key, at most overlapAttempts times; the caller
// judges the last attempt. A server that blocks duplicates never answers
// before the original completes and costs the extra attempts; held reports
// that every attempt looked like one: its duplicate was sent at least a
// third of the slow variant before the original completed, yet got the
// replay (a stall that long on every attempt is unlikely).
func (e *Env) duringSlow(ctx context.Context, quick bool, dup func(k string) wire.Resp) (k string, slow, d wire.Resp, held bool) {
	body, v, _ := e.Variant(apispec.VariantSlow)
	held = true
	for attempt := 1; attempt <= overlapAttempts && ctx.Err() == nil; attempt++ {
		k = e.NewKey()
		label := fmt.Sprintf("slow original (%s)", v.Duration)
		if attempt > 1 {
			label += fmt.Sprintf(", attempt %d", attempt)
		}
		wait := e.startInFlight(ctx, k, Req{Label: label, Key: k, Body: body}, v.Duration)
		d = dup(k)
		slow = wait()
		// A replay exists only once the original completed at the server,
		// whatever the client's clock says about the two answers.
		// Without evidence (no ids, no oracle) it is not shown to be one.
		replayed, err := e.Replayed(ctx, slow, d, k)
		held = held && replayed && slow.End.Sub(d.Start) >= v.Duration/3 && !stalled(slow, d, v.Duration)
		if slow.OK() && d.Err == nil && overlapped(slow, d) && (!quick || (d.End.Before(slow.End) && !replayed)) {
			return k, slow, d, held
		}
		if err == nil && !replayed && slow.OK() && d.OK() && overlapped(slow, d) {
			// The evidence shows a second execution: decisive, whenever
			// it was answered; a later attempt must not replace it (a
			// stalled duplicate would get the replay and hide it).
			return k, slow, d, false
		}
	}
	return k, slow, d, held
}

// startInFlight sends r (a slow request under key k that stays in flight
// for about slow) in the background and returns once it is in flight at
// the server, as far as can be shown (trap C13): with an oracle, once it
// counts an execution under k (the handler started, so the claim is held)
// and a tenth of slow has passed since the write; without one, a third of slow after the request was fully written, the
// head start the server gets for its claim. An oracle that has counted
// nothing half of slow after the write (a server that counts effects at
// the end) falls back to that bound. It also returns early when r
// completes or ctx ends; callers then see no overlap and say inconclusive.
// wait blocks until r completes and returns its response.
func (e *Env) startInFlight(ctx context.Context, k string, r Req, slow time.Duration) (wait func() wire.Resp) {
	var resp wire.Resp
	done := make(chan struct{})
	wrote := make(chan struct{})
	var once sync.Once
	sent := func() { once.Do(func() { close(wrote) }) }
	go func() {
		defer close(done)
		resp = e.Send(wire.WithSent(ctx, sent), r)
	}()
	wait = func() wire.Resp {
		<-done
		return resp
	}
	select {
	case <-wrote:
	case <-done:
		return wait
	case <-ctx.Done():
		return wait
	}
	bound := slow / 3
	if e.HasOracle() {
		bound = slow / 2
	}
	limit := time.NewTimer(bound)
	defer limit.Stop()
	// Never before a tenth of slow: a duplicate a few milliseconds into
	// the run would meet a claim whose lease is misread as milliseconds
	// (5 s as 5 ms) still held, and pass a server that lets it lapse.
	floor := time.NewTimer(slow / 10)
	defer floor.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	running, floored := false, false
	for {
		select {
		case <-done:
			return wait
		case <-ctx.Done():
			return wait
		case <-limit.C:
			return wait
		case <-floor.C:
			if floored = true; running {
				return wait
			}
		case <-tick.C:
			if !e.HasOracle() || running {
				continue
			}
			if n, err := e.count(ctx, k, false); err == nil && n >= 1 {
				if running = true; floored {
					return wait
				}
			}
		}
	}
}

// replayOf reports whether second is first's replay rather than a new
// execution, given n executions under the key counted by how. Without an
// id pointer equal bodies prove nothing (and a replay may differ in
// volatile members), so the oracle's count decides when there is one;
// with an id pointer the created ids decide, as in Reproduced.
func (e *Env) replayOf(first, second wire.Resp, n int, how string) bool {
	if !first.OK() || !second.OK() {
		return false
	}
	if !hasMarks(e.Op) {
		return how == "oracle" && n == 1
	}
	id := e.CreatedID(first)
	return id != "" && id == e.CreatedID(second)
}

// inFlightDuplicate sends the slow variant and, while it runs, a duplicate
// (to base, another replica, when not empty) and judges the duplicate's
// answer: the profile's in-flight status, or a blocked replay where the
// profile allows it; never a second execution.
func (e *Env) inFlightDuplicate(ctx context.Context, base string) Verdict {
	body, _, _ := e.Variant(apispec.VariantSlow)
	label, who, once := "duplicate while in flight", "duplicate", "exactly 1 execution"
	if base != "" {
		label, who, once = "duplicate on replica B while in flight on A", "duplicate on replica B", "exactly 1 execution across replicas"
	}
	k, slow, dup, held := e.duringSlow(ctx, true, func(k string) wire.Resp {
		return e.Send(ctx, Req{Label: label, Key: k, Body: body, Base: base})
	})
	if !slow.OK() {
		return e.Inconclusive("the slow variant did not succeed: " + slow.String())
	}
	if !overlapped(slow, dup) {
		return e.Missed("could not overlap: the duplicate was sent after the slow original completed")
	}
	n, how, _, err := e.Effects(ctx, k, slow, dup)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	observed := fmt.Sprintf("%s answered %s after %s; %d executions (%s)", who, dup.String(), dup.End.Sub(dup.Start).Round(time.Millisecond), n, how)
	expected := fmt.Sprintf("%v while in flight", e.Profile.InFlightStatus)
	if e.Profile.BlockOK {
		expected += fmt.Sprintf(", or the replay within %s", e.Profile.MaxBlock)
	}
	if n != 1 {
		return e.inTTL(e.Fail(once, observed), slow, dup)
	}
	if v := e.lostConn(dup); v != nil {
		return *v
	}
	switch {
	case dup.OK() && !e.replayOf(slow, dup, n, how):
		return e.inTTL(e.Fail(expected, "second execution: "+observed), slow, dup)
	case dup.OK():
		if !held {
			// A replay exists only once the original completed: without
			// every attempt showing the server holding the duplicate, a
			// stall may have delivered it after the original completed
			// (a server without an in-flight lock then replays too).
			return e.Missed(fmt.Sprintf("the duplicate got the replay, but not every one of %d attempts showed the server holding it (a stall may have delivered it after the original completed): %s", overlapAttempts, observed))
		}
		if e.Profile.BlockOK && dup.End.Sub(dup.Start) <= e.Profile.MaxBlock {
			return e.Pass("blocked, then replayed: " + observed)
		}
		return e.Unmet(expected, "waited and replayed: "+observed)
	case dup.StatusIn(e.Profile.InFlightStatus):
		if !dup.End.Before(slow.End) {
			return e.Missed("the conflict arrived only after the original completed: " + observed)
		}
		return e.Pass(observed)
	}
	return e.Unmet(expected, observed)
}

// conflict obtains an in-flight conflict under a fresh key k; v is set
// when none came. A duplicate answered only after the original completed
// is a missed overlap (inconclusive), unless every attempt showed the
// server holding it (see duringSlow) and the profile allows blocking: then
// there is no conflict to test (skip).
func (e *Env) conflict(ctx context.Context) (k string, slow, dup wire.Resp, v *Verdict) {
	body, _, _ := e.Variant(apispec.VariantSlow)
	k, slow, dup, held := e.duringSlow(ctx, true, func(k string) wire.Resp {
		return e.Send(ctx, Req{Label: "duplicate while in flight", Key: k, Body: body})
	})
	replayed, err := e.Replayed(ctx, slow, dup, k) // no evidence: not shown to be a replay
	var x Verdict
	switch {
	case !slow.OK():
		x = e.Inconclusive("the slow variant did not succeed: " + slow.String())
	case !overlapped(slow, dup):
		x = e.Missed("could not overlap: the duplicate was sent after the slow original completed")
	case err == nil && !replayed && dup.OK():
		// Shown to have executed again: no timing to retry for; the
		// in-flight cases judge that execution.
		x = e.Inconclusive("the duplicate sent in flight executed again instead of a conflict (see concurrent/in-flight-conflict): " + dup.String())
	case replayed && held && e.Profile.BlockOK:
		x = e.Skip(fmt.Sprintf("the server holds in-flight duplicates until the original completes (%d attempts; the last got %s): no in-flight conflict to test (see concurrent/in-flight-conflict)", overlapAttempts, dup.String()))
	case replayed && held:
		// Every attempt showed the server holding the duplicate: a choice,
		// not a missed timing; in-flight-conflict judges it (block_ok off).
		x = e.Inconclusive(fmt.Sprintf("no in-flight conflict: the server held the duplicate until the original completed in each of %d attempts (the last got %s), which the profile does not allow (block_ok off; see concurrent/in-flight-conflict)", overlapAttempts, dup.String()))
	case replayed, !dup.End.Before(slow.End):
		x = e.Missed(fmt.Sprintf("no in-flight conflict in %d attempts: the duplicate was answered only once the original completed (last: %s), a missed overlap or a server that holds duplicates (see concurrent/in-flight-conflict)", overlapAttempts, dup.String()))
	case !dup.StatusIn(e.Profile.InFlightStatus):
		// Answered while the original ran, but not with a conflict: nothing
		// to test here; concurrent/in-flight-conflict judges that answer.
		x = e.Skip(fmt.Sprintf("the duplicate got %s, not an in-flight conflict %v (see concurrent/in-flight-conflict)", dup.String(), e.Profile.InFlightStatus))
	default:
		return k, slow, dup, nil
	}
	v = &x
	return k, slow, dup, v
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
	body, sv, _ := e.Variant(apispec.VariantSlow)
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
		if v, ok := e.takenOver(k, slow, dups, d); ok {
			return e.inTTL(v, slow, dups...), true, 0
		}
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
		case r.OK(), r.StatusIn(e.Profile.InFlightStatus):
		default:
			unmet = append(unmet, off)
		}
	}
	observed := fmt.Sprintf("%s; %d executions (%s)", strings.Join(lines, "; "), n, how)
	switch {
	// Created ids name the duplicate that executed; the oracle alone only
	// counts, so with a late duplicate it cannot say whose execution it was.
	case (len(again) > 0 && (hasMarks(e.Op) || len(missed) == 0)) || (n != 1 && len(missed) == 0):
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

// overlapAttempts bounds how often duringSlow tries to create the overlap.
const overlapAttempts = 3

// stalled reports whether the timings of a slow original and a duplicate
// replayed after it look like a stalled machine rather than a server that
// held the duplicate: a holding server answers it as it completes the
// original, and the original takes about its declared duration. Under a
// stall either stretches by seconds (seen at 3x oversubscription: every
// attempt "held", the case skipped where it passed on a quiet machine).
func stalled(slow, dup wire.Resp, d time.Duration) bool {
	slack := max(d/2, 500*time.Millisecond)
	return slow.End.Sub(slow.Start) > d+slack || dup.End.Sub(slow.End) > slack
}

// overlapped reports whether d was sent (written) before the slow
// original completed.
func overlapped(slow, d wire.Resp) bool { return slow.Err == nil && d.SentAt().Before(slow.End) }

// earliest is the response of rs sent first: a burst's claim is no older.
func earliest(rs []wire.Resp) wire.Resp {
	first := rs[0]
	for _, r := range rs[1:] {
		if r.Start.Before(first.Start) {
			first = r
		}
	}
	return first
}

// minTTLStall is the room for a stall a TTL must leave after the slow
// original for a retry sent once it completed to be judged (see inTTL).
const minTTLStall = 500 * time.Millisecond

// inFlightOffsets are where, as fractions of the slow variant's declared
// duration after it was sent, concurrent/in-flight-offsets sends its
// duplicates: right once it is in flight, halfway, in the last quarter.
var inFlightOffsets = []struct {
	name string
	at   float64
}{{"start", 0}, {"middle", 0.5}, {"last quarter", 0.8}}

// ttlOffsets is concurrent/in-flight-offsets' MinTTL: its last duplicate
// must be sent inside TTL − margin to be judged.
func ttlOffsets(_ *apispec.Target, p *apispec.Profile, op *apispec.Operation) (time.Duration, string) {
	d := op.Variants[apispec.VariantSlow].Duration
	last := time.Duration(inFlightOffsets[len(inFlightOffsets)-1].at * float64(d))
	return last + p.Margin, fmt.Sprintf("the duplicate at +%s of the %s slow original is judged only within TTL − margin %s", last, d, p.Margin)
}

package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// CONCURRENT: a duplicate that arrives while the original is still running
// must not run again (draft §2.6, §2.7). Overlap is created on purpose with
// the slow variant; without it a fast handler finishes first and every
// duplicate replays (trap C13).
func init() {
	register(
		Case{Meta: Meta{ID: "concurrent/in-flight-conflict", Family: "concurrent", Requirements: []string{"IK-CONCURRENT-1"}, Level: Should,
			Requirement: "draft §2.6/§2.7: if the original request is still being processed, the resource SHOULD respond with a resource conflict error (409); a server that waits and then replays is tolerated when the profile allows blocking.",
			Explanation: "A retry sent while the original is provably in flight gets 409 (or, if blocking is allowed, the replay) and never executes again.",
			Needs:       []Need{NeedSlow, NeedEffects}},
			PerOperation: true, MinTTL: ttlInSlow, Run: concurrentInFlightConflict},
		Case{Meta: Meta{ID: "concurrent/same-key-burst", Family: "concurrent", Requirements: []string{"IK-CONCURRENT-2"}, Level: Must,
			Requirement: "All sources: N parallel identical requests with the same key cause exactly one execution; each response is the success (original or replay) or an in-flight conflict.",
			Explanation: "Rounds of same-key requests (8 of 32 by default, a fresh key per round) released together (last-byte sync by default) each produce one execution and one created resource; every round runs and the worst is reported.",
			Needs:       []Need{NeedEffects}},
			PerOperation: true, Run: concurrentSameKeyBurst},
		Case{Meta: Meta{ID: "concurrent/conflict-not-poisoned", Family: "concurrent", Requirements: []string{"IK-CONCURRENT-3", "IK-ERRORS-6"}, Level: Should,
			Requirement: "draft §2.7 (clients retry after a 409 unchanged); Stripe: no idempotent result is saved for a concurrent conflict.",
			Explanation: "After an in-flight 409, the unchanged retry once the original completed gets the original's replay, not the 409.",
			Needs:       []Need{NeedSlow}},
			PerOperation: true, UsesOracle: true, MinTTL: ttlAfterSlow, Run: concurrentConflictNotPoisoned},
		Case{Meta: Meta{ID: "concurrent/retry-after", Family: "concurrent", Requirements: []string{"IK-CONCURRENT-4"}, Level: May,
			Requirement: "Profile retry_after_on_409 (Echo: retry after the Retry-After delay when present): the in-flight 409 carries Retry-After.",
			Explanation: "The in-flight conflict tells the client when to retry with a valid Retry-After.",
			Needs:       []Need{NeedSlow}},
			PerOperation: true, Skips: skipNoRetryAfter, Run: concurrentRetryAfter},
		Case{Meta: Meta{ID: "concurrent/changed-body-in-flight", Family: "concurrent", Requirements: []string{"IK-CONCURRENT-5"}, Level: Should,
			Requirement: "Trap C7: a different payload under a key whose original is still in flight gets 409 (lock checked first) or 422 (payload checked first), never a second execution.",
			Explanation: "A changed body sent while the original is in flight gets an in-flight or mismatch error and executes nothing.",
			Needs:       []Need{NeedSlow, NeedEffects}},
			PerOperation: true, MinTTL: ttlInSlow, Run: concurrentChangedBodyInFlight},
	)
}

// overlapAttempts bounds how often duringSlow tries to create the overlap.
const overlapAttempts = 3

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
func (e *Env) duringSlow(ctx context.Context, quick bool, dup func(k string) Resp) (k string, slow, d Resp, held bool) {
	body, v, _ := e.Variant(VariantSlow)
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

// stalled reports whether the timings of a slow original and a duplicate
// replayed after it look like a stalled machine rather than a server that
// held the duplicate: a holding server answers it as it completes the
// original, and the original takes about its declared duration. Under a
// stall either stretches by seconds (seen at 3x oversubscription: every
// attempt "held", the case skipped where it passed on a quiet machine).
func stalled(slow, dup Resp, d time.Duration) bool {
	slack := max(d/2, 500*time.Millisecond)
	return slow.End.Sub(slow.Start) > d+slack || dup.End.Sub(slow.End) > slack
}

// startInFlight sends r (a slow request under key k that stays in flight
// for about slow) in the background and returns once it is in flight at
// the server, as far as can be shown (trap C13): with an oracle, once it
// counts an execution under k (the handler started, so the claim is held);
// without one, a third of slow after the request was fully written, the
// head start the server gets for its claim. An oracle that has counted
// nothing half of slow after the write (a server that counts effects at
// the end) falls back to that bound. It also returns early when r
// completes or ctx ends; callers then see no overlap and say inconclusive.
// wait blocks until r completes and returns its response.
func (e *Env) startInFlight(ctx context.Context, k string, r Req, slow time.Duration) (wait func() Resp) {
	var resp Resp
	done := make(chan struct{})
	wrote := make(chan struct{})
	var once sync.Once
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(wrote) }) }}
	go func() {
		defer close(done)
		resp = e.Send(httptrace.WithClientTrace(ctx, trace), r)
	}()
	wait = func() Resp {
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
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return wait
		case <-ctx.Done():
			return wait
		case <-limit.C:
			return wait
		case <-tick.C:
			if !e.HasOracle() {
				continue
			}
			if n, err := e.count(ctx, k, false); err == nil && n >= 1 {
				return wait
			}
		}
	}
}

// overlapped reports whether d was sent (written) before the slow
// original completed.
func overlapped(slow, d Resp) bool { return slow.Err == nil && d.SentAt().Before(slow.End) }

// replayOf reports whether second is first's replay rather than a new
// execution, given n executions under the key counted by how. Without an
// id pointer equal bodies prove nothing (and a replay may differ in
// volatile members), so the oracle's count decides when there is one;
// with an id pointer the created ids decide, as in Reproduced.
func (e *Env) replayOf(first, second Resp, n int, how string) bool {
	if !first.OK() || !second.OK() {
		return false
	}
	if e.Op.IDPointer == "" {
		return how == "oracle" && n == 1
	}
	id := e.CreatedID(first)
	return id != "" && id == e.CreatedID(second)
}

func concurrentInFlightConflict(ctx context.Context, e *Env) Verdict {
	return e.inFlightDuplicate(ctx, "")
}

// inFlightDuplicate sends the slow variant and, while it runs, a duplicate
// (to base, another replica, when not empty) and judges the duplicate's
// answer: the profile's in-flight status, or a blocked replay where the
// profile allows it; never a second execution.
func (e *Env) inFlightDuplicate(ctx context.Context, base string) Verdict {
	body, _, _ := e.Variant(VariantSlow)
	label, who, once := "duplicate while in flight", "duplicate", "exactly 1 execution"
	if base != "" {
		label, who, once = "duplicate on replica B while in flight on A", "duplicate on replica B", "exactly 1 execution across replicas"
	}
	k, slow, dup, held := e.duringSlow(ctx, true, func(k string) Resp {
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
	case e.Profile.InFlightOK(dup.Status):
		if !dup.End.Before(slow.End) {
			return e.Missed("the conflict arrived only after the original completed: " + observed)
		}
		return e.Pass(observed)
	}
	return e.Unmet(expected, observed)
}

func concurrentSameKeyBurst(ctx context.Context, e *Env) Verdict { return e.burstRounds(ctx) }

// burstRounds runs all the profile's rounds of same-key bursts, each
// under a fresh key, and reports the worst round (a narrow race may show
// in any of them); with bases the requests of each burst are spread over
// those replicas (replicas/burst-across).
func (e *Env) burstRounds(ctx context.Context, bases ...string) Verdict {
	rounds, size := e.Profile.burst()
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
		if sb, _, ok := e.Variant(VariantSlow); ok && round == 1 {
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

// severity orders verdicts from the best to the worst.
var severity = map[Status]int{Pass: 0, Skip: 1, Unverifiable: 2, Inconclusive: 3, Warn: 4, Fail: 5}

// worse reports whether a is a worse verdict than b.
func worse(a, b Verdict) bool { return severity[a.Status] > severity[b.Status] }

// burst sends size requests under key k, released together by a barrier
// over client's warmed connections; with bases, request i goes to replica
// i mod len(bases).
func (e *Env) burst(ctx context.Context, client *http.Client, k string, size int, body []byte, label string, bases ...string) []Resp {
	start := make(chan struct{})
	rs := make([]Resp, size)
	var wg sync.WaitGroup
	for i := range rs {
		wg.Go(func() {
			<-start
			r := Req{Label: fmt.Sprintf("%s %d", label, i+1), Key: k, Body: body, client: client}
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
func (e *Env) judgeBurst(ctx context.Context, k, prefix string, rs []Resp) Verdict {
	statuses := map[string]int{}
	var okResp *Resp
	for i := range rs {
		if rs[i].Err != nil {
			statuses["error"]++
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
	if n != 1 || len(ids) > 1 {
		observed += "; to fix: claim the key atomically before executing (insert-if-absent under a lock, or a unique constraint), not a lookup and later a store"
		return e.inTTL(e.Fail("exactly 1 execution and 1 created resource", observed), spanOf(rs), rs...)
	}
	if okResp == nil {
		return e.Inconclusive("no request of the burst succeeded: " + observed)
	}
	if v := e.lostConn(rs...); v != nil {
		return *v // the count is right, but a lost request's answer is unknown
	}
	expected := fmt.Sprintf("each response the success/replay or an in-flight conflict %v", e.Profile.InFlightStatus)
	var shed, off *Resp
	reached := 0
	for i, r := range rs {
		switch {
		case r.OK() && e.replayOf(*okResp, r, n, how), r.Err == nil && e.Profile.InFlightOK(r.Status):
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

// earliest is the response of rs sent first: a burst's claim is no older.
func earliest(rs []Resp) Resp {
	first := rs[0]
	for _, r := range rs[1:] {
		if r.Start.Before(first.Start) {
			first = r
		}
	}
	return first
}

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

// conflict obtains an in-flight conflict under a fresh key k; v is set
// when none came. A duplicate answered only after the original completed
// is a missed overlap (inconclusive), unless every attempt showed the
// server holding it (see duringSlow) and the profile allows blocking: then
// there is no conflict to test (skip).
func (e *Env) conflict(ctx context.Context) (k string, slow, dup Resp, v *Verdict) {
	body, _, _ := e.Variant(VariantSlow)
	k, slow, dup, held := e.duringSlow(ctx, true, func(k string) Resp {
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
	case !e.Profile.InFlightOK(dup.Status):
		// Answered while the original ran, but not with a conflict: nothing
		// to test here; concurrent/in-flight-conflict judges that answer.
		x = e.Skip(fmt.Sprintf("the duplicate got %s, not an in-flight conflict %v (see concurrent/in-flight-conflict)", dup.String(), e.Profile.InFlightStatus))
	default:
		return k, slow, dup, nil
	}
	v = &x
	return k, slow, dup, v
}

// minTTLStall is the room for a stall a TTL must leave after the slow
// original for a retry sent once it completed to be judged (see inTTL).
const minTTLStall = 500 * time.Millisecond

// ttlAfterSlow is the MinTTL of a case that retries once the slow original
// completed: every such retry would be sent past TTL − margin, never
// judged, under a shorter TTL.
func ttlAfterSlow(_ *Target, p *Profile, op *Operation) (time.Duration, string) {
	d := op.Variants[VariantSlow].Duration
	return d + p.Margin + minTTLStall, fmt.Sprintf("a retry after the %s slow original is judged only within TTL − margin %s, with %s for stalls", d, p.Margin, minTTLStall)
}

// ttlInSlow is the MinTTL of a case whose duplicate is sent once the slow
// original is in flight (startInFlight waits up to half of it).
func ttlInSlow(_ *Target, p *Profile, op *Operation) (time.Duration, string) {
	d := op.Variants[VariantSlow].Duration
	return d/2 + p.Margin, fmt.Sprintf("the duplicate sent up to %s into the %s slow original is judged only within TTL − margin %s", d/2, d, p.Margin)
}

func concurrentConflictNotPoisoned(ctx context.Context, e *Env) Verdict {
	body, _, _ := e.Variant(VariantSlow)
	k, slow, dup, v := e.conflict(ctx)
	if v != nil {
		return *v
	}
	retry := e.Send(ctx, Req{Label: "retry after completion", Key: k, Body: body})
	observed := fmt.Sprintf("in flight: %d; after completion: %s", dup.Status, retry.String())
	n, how, have, err := e.Effects(ctx, k, slow, retry)
	switch {
	case err != nil:
		return e.undecided(err, observed)
	case !have:
		return e.undecided(errNoEvidence, observed)
	}
	if v := e.lostConn(retry); v != nil {
		return *v
	}
	if !e.replayOf(slow, retry, n, how) { // status fidelity: replay/same-status
		return e.inTTL(e.Unmet("the original's replay (same resource)", observed), slow, retry)
	}
	return e.Pass(observed)
}

func skipNoRetryAfter(_ *Target, p *Profile, _ *Operation) string {
	if p.RetryAfterOn409 == No {
		return "profile retry_after_on_409 is false"
	}
	return ""
}

func concurrentRetryAfter(ctx context.Context, e *Env) Verdict {
	_, _, dup, v := e.conflict(ctx)
	if v != nil {
		return *v
	}
	ra := dup.Header.Get("Retry-After")
	valid := ra != ""
	if valid {
		if _, err := strconv.Atoi(ra); err != nil {
			_, err = http.ParseTime(ra)
			valid = err == nil
		}
	}
	observed := fmt.Sprintf("%d with Retry-After %q", dup.Status, ra)
	switch {
	case valid:
		return e.Pass(observed) // a MAY seen is a MAY met, whatever the profile knew
	case e.Profile.RetryAfterOn409 == Unknown:
		return e.Finding("retry_after_on_409", observed)
	}
	return e.Unmet("Retry-After: delay-seconds or HTTP-date", observed)
}

func concurrentChangedBodyInFlight(ctx context.Context, e *Env) Verdict {
	slowBody, _, _ := e.Variant(VariantSlow)
	pr := e.firstProbe()
	changed, err := jsonx.MergePatch(slowBody, pr.patch)
	if err != nil {
		return e.Skip(err.Error())
	}
	k, slow, dup, _ := e.duringSlow(ctx, true, func(k string) Resp {
		return e.Send(ctx, Req{Label: "changed body (" + pr.name + ") while in flight", Key: k, Body: changed})
	})
	if !slow.OK() {
		return e.Inconclusive("the slow variant did not succeed: " + slow.String())
	}
	if !overlapped(slow, dup) {
		return e.Missed("could not overlap: the changed request was sent after the original completed")
	}
	n, how, _, err := e.Effects(ctx, k, slow, dup)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	observed := fmt.Sprintf("changed body answered %s; %d executions (%s)", dup.String(), n, how)
	accepted := append(append([]int(nil), e.Profile.InFlightStatus...), e.Profile.MismatchStatus...)
	switch {
	case n != 1:
		return e.inTTL(e.Fail("exactly 1 execution", observed), slow, dup)
	case dup.StaleConn():
		return *e.lostConn(dup)
	case dup.OK() && e.replayOf(slow, dup, n, how) && e.Profile.StaleReplayOnMismatch == Yes:
		return e.Pass("the original's response for a different payload, as the profile allows (stale_replay_on_mismatch): " + observed)
	case dup.OK() && e.replayOf(slow, dup, n, how) && e.Profile.StaleReplayOnMismatch == Unknown:
		return e.Finding("stale_replay_on_mismatch", "the original's response for a different payload: "+observed)
	case dup.OK() && e.replayOf(slow, dup, n, how):
		return e.Fail(fmt.Sprintf("%v", accepted), "the original's response for a different payload: "+observed)
	case dup.OK():
		return e.inTTL(e.Fail(fmt.Sprintf("%v", accepted), "executed the different payload: "+observed), slow, dup)
	case hasStatus(accepted, dup.Status):
		return e.Pass(observed)
	}
	return e.Unmet(fmt.Sprintf("%v", accepted), observed)
}

package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/target"
	"github.com/idemcheck/idemcheck/wire"
)

// EXPIRY: a key lives for the declared TTL and, per profile, is fresh (or
// answered "result expired") after it (draft §2.3). Expiry is a floor, not
// a deadline (trap C9): replays are asserted before TTL − margin, counted
// from the first request's start (a server may count from its claim);
// freshness after TTL + grace, counted from the first response's end (a
// server may count from completion). These cases wait the longest; the
// engine runs them alongside the rest.
func init() {
	register(
		Case{Meta: Meta{ID: "expiry/replays-before-ttl", Family: "expiry", Requirements: []string{"IK-EXPIRY-1"}, Level: Should,
			Requirement: "draft §2.3 (keys MAY expire under a published policy); profile ttl and margin: a retry before TTL − margin still gets the original result.",
			Explanation: "A retry sent shortly before the declared TTL runs out replays the original and does not execute again.",
			Needs:       []Need{NeedTTL, NeedEffects}},
			PerOperation: true, Skips: expiryWaitTooLong, MinTTL: ttlPastMargin, Run: expiryReplaysBeforeTTL},
		Case{Meta: Meta{ID: "expiry/fresh-after-ttl", Family: "expiry", Requirements: []string{"IK-EXPIRY-2", "IK-EXPIRY-3"}, Level: Should,
			Requirement: "Stripe (a key reused after the original is pruned is a new request), seeds (fresh after expiry); Echo alternative: 409 \"result expired\". Profile expiry decides which.",
			Explanation: "After TTL + grace the same key executes as a new request (expiry fresh) or gets 409 (expiry expired-409), never the stale replay.",
			Needs:       []Need{NeedTTL, NeedEffects}},
			PerOperation: true, Skips: expiryWaitTooLong, Run: expiryFreshAfterTTL},
		Case{Meta: Meta{ID: "expiry/counted-from", Family: "expiry", Requirements: []string{"IK-EXPIRY-4"}, Level: Info,
			Requirement: "No source defines it: is retention measured from the first request (rocket-rides: created_at) or slid forward by replays?",
			Explanation: "A replay near the TTL edge, then a retry past the original's expiry, shows whether replays extend a key's life.",
			Needs:       []Need{NeedTTL, NeedEffects}},
			PerOperation: true, Skips: expiryWaitTooLong, MinTTL: ttlSlidWindow, Run: expiryCountedFrom},
	)
}

// maxExpiryWait bounds how long an expiry case may wait. A longer declared
// TTL (Stripe's 24 h) needs a test deployment with a short one (trap C9).
const maxExpiryWait = 2 * time.Minute

// expiryWaitTooLong is the Skips of the expiry cases: a TTL plus grace
// longer than maxExpiryWait cannot be waited out.
func expiryWaitTooLong(t *target.Target, p *target.Profile, _ *target.Operation) string {
	if w := t.TTL + p.Grace; !t.NeverExpires && w > maxExpiryWait {
		return fmt.Sprintf("declared ttl %s + grace %s is longer than the %s an expiry case waits; run against a deployment with a short TTL", t.TTL, p.Grace, maxExpiryWait)
	}
	return ""
}

// ttlPastMargin is the MinTTL of a retry at TTL − margin: it must come
// after the original.
func ttlPastMargin(_ *target.Target, p *target.Profile, _ *target.Operation) (time.Duration, string) {
	return p.Margin + 100*time.Millisecond, fmt.Sprintf("the retry is sent at TTL − margin %s, after the original", p.Margin)
}

// slidSlack is how far expiry/counted-from's last retry lands past a
// window its mid-life replay would have slid.
const slidSlack = 250 * time.Millisecond

// ttlSlidWindow is expiry/counted-from's MinTTL: its mid-life replay must
// fit between grace + slack and TTL − margin.
func ttlSlidWindow(_ *target.Target, p *target.Profile, _ *target.Operation) (time.Duration, string) {
	return p.Margin + p.Grace + slidSlack + 100*time.Millisecond, fmt.Sprintf("to tell a slid window apart: more than margin %s + grace %s + %s", p.Margin, p.Grace, slidSlack)
}

// tooLongToWait returns a Skip verdict when the API declares that keys
// never expire ("ttl: never"): then there is no expiry to test, and the
// declaration is recorded as the finding.
func (e *Env) tooLongToWait() *Verdict {
	if e.Target.NeverExpires {
		v := Verdict{Status: Skip, Observed: "the API declares that keys never expire (ttl: never)",
			Reason: "ttl: never: no expiry to test; finding recorded (draft §2.3 lets keys expire under a published policy, it does not require it)"}
		return &v
	}
	return nil
}

// replayedOrExecuted says whether retry under k executed again or
// replayed first (a 2xx that did not execute), from the oracle count when
// there is one, else from created ids. A retry lost on a stale connection
// is neither: err says so. Without evidence err is errNoEvidence.
func (e *Env) replayedOrExecuted(ctx context.Context, k string, first, retry wire.Resp) (executed, replayed bool, observed string, err error) {
	n, how, have, err := e.Effects(ctx, k, first, retry)
	switch {
	case err != nil:
		return false, false, "", err
	case !have:
		return false, false, "", errNoEvidence
	}
	observed = fmt.Sprintf("retry answered %s; %d executions (%s)", retry.String(), n, how)
	if how == "oracle" {
		executed = n >= 2
	} else {
		id := e.CreatedID(first)
		executed = retry.OK() && (id == "" || id != e.CreatedID(retry))
	}
	if !executed && retry.StaleConn() {
		return false, false, observed, wire.ErrStaleConn
	}
	return executed, retry.OK() && !executed, observed, nil
}

func expiryReplaysBeforeTTL(ctx context.Context, e *Env) Verdict {
	return e.replaysBeforeTTL(ctx, "")
}

// replaysBeforeTTL retries the original at TTL − margin (on base, another
// replica, when not empty) and expects its replay.
func (e *Env) replaysBeforeTTL(ctx context.Context, base string) Verdict {
	label, where, early := "retry", "", "the key expired early and executed again: "
	if base != "" {
		label, where, early = "retry on replica B", "on replica B ", "the key expired early or is not shared across replicas: "
	}
	if v := e.tooLongToWait(); v != nil {
		return *v
	}
	ttl, margin := e.Target.TTL, e.Profile.Margin
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	at := first.Start.Add(ttl - margin)
	if time.Now().After(at) {
		return e.Missed(fmt.Sprintf("the original took %s, past TTL − margin: no time left to retry before the TTL", first.End.Sub(first.Start).Round(time.Millisecond)))
	}
	if err := clock.Until(ctx, at); err != nil {
		return e.Inconclusive(err.Error())
	}
	retry := e.Send(ctx, Req{Label: fmt.Sprintf("%s at TTL − %s", label, margin), Key: k, Base: base})
	if retry.Start.Sub(first.Start) >= ttl {
		return e.Missed("the retry left only after the TTL had run out")
	}
	executed, replayed, observed, err := e.replayedOrExecuted(ctx, k, first, retry)
	if err != nil {
		return e.undecided(err, "cannot tell a replay from an execution: "+retry.String())
	}
	observed = fmt.Sprintf("%s%s after the original started; %s", where, retry.Start.Sub(first.Start).Round(time.Millisecond), observed)
	switch {
	case executed && retry.End.Sub(first.Start) >= ttl:
		// Sent in time, answered late: the server may have seen it only
		// after the TTL.
		return e.Missed("the retry executed again but its answer came after the TTL: " + observed)
	case executed:
		return e.Unmet(fmt.Sprintf("the replay up to TTL − margin (%s)", ttl-margin), early+observed)
	case !replayed:
		return e.Unmet("the original's replay", observed)
	}
	return e.Pass(observed)
}

func expiryFreshAfterTTL(ctx context.Context, e *Env) Verdict {
	if v := e.tooLongToWait(); v != nil {
		return *v
	}
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	after := e.Target.TTL + e.Profile.Grace
	if err := clock.Until(ctx, first.End.Add(after)); err != nil {
		return e.Inconclusive(err.Error())
	}
	retry := e.Send(ctx, Req{Label: fmt.Sprintf("retry at TTL + %s", e.Profile.Grace), Key: k})
	executed, stale, observed, err := e.replayedOrExecuted(ctx, k, first, retry)
	if err != nil {
		return e.undecided(err, "cannot tell a replay from an execution: "+retry.String())
	}
	observed = fmt.Sprintf("%s after the original completed; %s", retry.Start.Sub(first.End).Round(time.Millisecond), observed)
	switch {
	case retry.Is5xx() || retry.Err != nil:
		return e.Unmet("a new execution or a \"result expired\" error, never a 5xx", observed)
	case e.Profile.Expiry == target.ExpiryUnknown:
		return e.Finding("expiry", observed)
	case e.Profile.Expiry == target.ExpiryExpired409:
		if retry.Status != http.StatusConflict {
			return e.Unmet("409 \"result expired\" (profile expiry expired-409)", observed)
		}
		return e.Pass(observed)
	case stale:
		return e.Unmet(fmt.Sprintf("a new execution after TTL + grace (%s)", after), "the stale replay: "+observed)
	case !executed || !retry.OK():
		return e.Unmet("a new execution (profile expiry fresh)", observed)
	}
	return e.Pass(observed)
}

func expiryCountedFrom(ctx context.Context, e *Env) Verdict {
	if v := e.tooLongToWait(); v != nil {
		return *v
	}
	ttl, margin, grace := e.Target.TTL, e.Profile.Margin, e.Profile.Grace
	// The mid-life replay must come late enough that a window slid by it
	// still covers the last retry (after grace + slack) and early enough
	// to be a replay (before TTL − margin): halfway between the two.
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	midAt := (grace + slidSlack + ttl - margin) / 2
	if err := clock.Until(ctx, first.Start.Add(midAt)); err != nil {
		return e.Inconclusive(err.Error())
	}
	mid := e.Send(ctx, Req{Label: fmt.Sprintf("replay at %s of the TTL", midAt), Key: k})
	if replayed, err := e.Replayed(ctx, first, mid, k); err != nil || !replayed {
		return e.Inconclusive("the replay near the TTL edge did not replay (see expiry/replays-before-ttl): " + mid.String())
	}
	if err := clock.Until(ctx, first.End.Add(ttl+grace)); err != nil {
		return e.Inconclusive(err.Error())
	}
	last := e.Send(ctx, Req{Label: fmt.Sprintf("retry at the original's TTL + %s", grace), Key: k})
	_, replayed, observed, err := e.replayedOrExecuted(ctx, k, first, last)
	if err != nil {
		return e.undecided(err, "cannot tell a replay from an execution: "+last.String())
	}
	if replayed {
		return e.Pass("replayed past the original's TTL: retention slid with the replay, or keys do not expire (see expiry/fresh-after-ttl); " + observed)
	}
	return e.Pass("counted from the first request: the replay did not extend it; " + observed)
}

package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/clock"
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
			Proof:        ByFresh,
			PerOperation: true, Skips: expiryWaitTooLong, Unfit: notForFirstSent("a key past its retention is refused by its first_sent, never fresh (security/invalid-format-rejected probes it)"), Run: expiryFreshAfterTTL},
		Case{Meta: Meta{ID: "expiry/counted-from", Family: "expiry", Requirements: []string{"IK-EXPIRY-4"}, Level: Info,
			Requirement: "No source defines it: is retention measured from the first request (rocket-rides: created_at) or slid forward by replays?",
			Explanation: "A replay near the TTL edge, then a retry past the original's expiry, shows whether replays extend a key's life.",
			Needs:       []Need{NeedTTL, NeedEffects}},
			Proof:        ByFresh,
			PerOperation: true, Skips: expiryWaitTooLong, MinTTL: ttlSlidWindow, Unfit: notForFirstSent("a key past its retention is refused by its first_sent, never fresh: there is no moment it turns fresh to measure"), Run: expiryCountedFrom},
	)
}

// expiryWaitTooLong is the Skips of the expiry cases: a TTL plus grace
// longer than maxExpiryWait cannot be waited out.
func expiryWaitTooLong(t *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	if w := t.TTL + p.Grace; !t.NeverExpires && w > maxExpiryWait {
		return fmt.Sprintf("declared ttl %s + grace %s is longer than the %s an expiry case waits; run against a deployment with a short TTL", t.TTL, p.Grace, maxExpiryWait)
	}
	return ""
}

// ttlPastMargin is the MinTTL of a retry at TTL − margin: it must come
// after the original.
func ttlPastMargin(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) (time.Duration, string) {
	return p.Margin + 100*time.Millisecond, fmt.Sprintf("the retry is sent at TTL − margin %s, after the original", p.Margin)
}

// slidSlack is how far expiry/counted-from's last retry lands past a
// window its mid-life replay would have slid.
const slidSlack = 250 * time.Millisecond

// ttlSlidWindow is expiry/counted-from's MinTTL: its mid-life replay must
// fit between grace + slack and TTL − margin.
func ttlSlidWindow(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) (time.Duration, string) {
	return p.Margin + p.Grace + slidSlack + 100*time.Millisecond, fmt.Sprintf("to tell a slid window apart: more than margin %s + grace %s + %s", p.Margin, p.Grace, slidSlack)
}

func expiryReplaysBeforeTTL(ctx context.Context, e *Env) Verdict {
	return e.replaysBeforeTTL(ctx, "")
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
	if v := e.lostConn(retry); v != nil {
		return *v // the retry never reached the server: no answer of its
	}
	switch {
	case retry.Is5xx() || retry.Err != nil:
		return e.Unmet("a new execution or a \"result expired\" error, never a 5xx", observed)
	case e.Profile.Expiry == apispec.ExpiryUnknown:
		return e.Finding("expiry", observed)
	case e.Profile.Expiry == apispec.ExpiryExpired409:
		if retry.Status != http.StatusConflict {
			return e.Unmet("409 \"result expired\" (profile expiry expired-409)", observed)
		}
		return e.Pass(observed)
	case stale:
		return e.Unmet(fmt.Sprintf("a new execution after TTL + grace (%s)", after), "the stale replay: "+observed)
	case !executed:
		return e.Unmet("a new execution (profile expiry fresh)", observed)
	case !retry.OK():
		// Executed afresh and answered by its outcome: a once-only action
		// on its resource meets what the first execution left ("already
		// captured"), a business error. The key was fresh; that is the rule.
		return e.Pass(observed + " (a new execution, answered with its own outcome)")
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

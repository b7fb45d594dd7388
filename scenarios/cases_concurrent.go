package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
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
			Proof:        ByInFlight,
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
			Proof:        ByInFlight,
			PerOperation: true, UsesOracle: true, MinTTL: ttlAfterSlow, Run: concurrentConflictNotPoisoned},
		Case{Meta: Meta{ID: "concurrent/retry-after", Family: "concurrent", Requirements: []string{"IK-CONCURRENT-4"}, Level: May,
			Requirement: "Profile retry_after_on_409 (Echo: retry after the Retry-After delay when present): the in-flight 409 carries Retry-After.",
			Explanation: "The in-flight conflict tells the client when to retry with a valid Retry-After.",
			Needs:       []Need{NeedSlow}},
			Proof:        ByInFlight,
			PerOperation: true, Skips: skipNoRetryAfter, Unfit: needs[wire.HeaderFields]("Retry-After is an HTTP field"), Run: concurrentRetryAfter},
		Case{Meta: Meta{ID: "concurrent/changed-body-in-flight", Family: "concurrent", Requirements: []string{"IK-CONCURRENT-5"}, Level: Should,
			Requirement: "Trap C7: a different payload under a key whose original is still in flight gets 409 (lock checked first) or 422 (payload checked first), never a second execution.",
			Explanation: "A changed body sent while the original is in flight gets an in-flight or mismatch error and executes nothing.",
			Needs:       []Need{NeedSlow, NeedEffects}},
			Proof:        ByMismatch | ByInFlight,
			PerOperation: true, MinTTL: ttlInSlow, Run: concurrentChangedBodyInFlight},
	)
}

func concurrentInFlightConflict(ctx context.Context, e *Env) Verdict {
	return e.inFlightDuplicate(ctx, "")
}

func concurrentSameKeyBurst(ctx context.Context, e *Env) Verdict { return e.burstRounds(ctx) }

// ttlAfterSlow is the MinTTL of a case that retries once the slow original
// completed: every such retry would be sent past TTL − margin, never
// judged, under a shorter TTL.
func ttlAfterSlow(_ *apispec.Target, p *apispec.Profile, op *apispec.Operation) (time.Duration, string) {
	d := op.Variants[apispec.VariantSlow].Duration
	return d + p.Margin + minTTLStall, fmt.Sprintf("a retry after the %s slow original is judged only within TTL − margin %s, with %s for stalls", d, p.Margin, minTTLStall)
}

// ttlInSlow is the MinTTL of a case whose duplicate is sent once the slow
// original is in flight (startInFlight waits up to half of it).
func ttlInSlow(_ *apispec.Target, p *apispec.Profile, op *apispec.Operation) (time.Duration, string) {
	d := op.Variants[apispec.VariantSlow].Duration
	return d/2 + p.Margin, fmt.Sprintf("the duplicate sent up to %s into the %s slow original is judged only within TTL − margin %s", d/2, d, p.Margin)
}

func concurrentConflictNotPoisoned(ctx context.Context, e *Env) Verdict {
	body, _, _ := e.Variant(apispec.VariantSlow)
	k, slow, dup, v := e.conflict(ctx)
	if v != nil {
		return *v
	}
	retry := e.Send(ctx, Req{Label: "retry after completion", Key: k, Body: body})
	observed := fmt.Sprintf("in flight: %s; after completion: %s", dup.StatusText(), retry.String())
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

func skipNoRetryAfter(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	if p.RetryAfterOn409 == apispec.No {
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
	case e.Profile.RetryAfterOn409 == apispec.Unknown:
		return e.Finding("retry_after_on_409", observed)
	}
	return e.Unmet("Retry-After: delay-seconds or HTTP-date", observed)
}

func concurrentChangedBodyInFlight(ctx context.Context, e *Env) Verdict {
	slowBody, _, _ := e.Variant(apispec.VariantSlow)
	pr := e.firstProbe()
	changed, err := pr.on(slowBody)
	if err != nil {
		return e.Skip(err.Error())
	}
	k, slow, dup, _ := e.duringSlow(ctx, true, func(k string) wire.Resp {
		return e.Send(ctx, pr.req("changed request ("+pr.name+") while in flight", k, changed))
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
	accepted := append(append(apispec.Statuses(nil), e.Profile.InFlightStatus...), e.Profile.MismatchStatus...)
	switch {
	case n != 1:
		return e.inTTL(e.Fail("exactly 1 execution", observed), slow, dup)
	case dup.NotReached():
		return *e.lostConn(dup)
	case dup.OK() && e.replayOf(slow, dup, n, how) && e.Profile.StaleReplayOnMismatch == apispec.Yes:
		return e.Pass("the original's response for a different payload, as the profile allows (stale_replay_on_mismatch): " + observed)
	case dup.OK() && e.replayOf(slow, dup, n, how) && e.Profile.StaleReplayOnMismatch == apispec.Unknown:
		return e.Finding("stale_replay_on_mismatch", "the original's response for a different payload: "+observed)
	case dup.OK() && e.replayOf(slow, dup, n, how):
		return e.Fail(fmt.Sprintf("%v", accepted), "the original's response for a different payload: "+observed)
	case dup.OK():
		return e.inTTL(e.Fail(fmt.Sprintf("%v", accepted), "executed the different payload: "+observed), slow, dup)
	case dup.StatusIn(accepted):
		return e.Pass(observed)
	}
	return e.Unmet(fmt.Sprintf("%v", accepted), observed)
}

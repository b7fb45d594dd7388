package scenarios

import (
	"context"
	"fmt"
	"net/http"

	"github.com/idemcheck/idemcheck/apispec"
)

// ERRORS: which failure outcomes a key keeps. The draft says "success or
// an error" yet defers 5xx and other errors to the docs (trap C10); errors
// answered before the idempotency layer are never stored (C11), and
// idempotency errors must not poison the key (C12). Caching is only ever
// judged with a deterministic failing variant and the oracle.
func init() {
	register(
		Case{Meta: Meta{ID: "errors/transient-5xx", Family: "errors", Requirements: []string{"IK-ERRORS-1"}, Level: Should,
			Requirement: "draft §2.6 \"success or an error\" vs §2.7 (other errors per the docs): Stripe replays a 5xx once execution began; seeds do not cache transient 5xx. Profile cache_5xx decides.",
			Explanation: "A retry of a request that failed with a transient 5xx is replayed (cache_5xx true) or executed again (cache_5xx false).",
			Needs:       []Need{NeedTransientError, NeedOracle}},
			Proof:        ByFresh,
			PerOperation: true, Run: errorsTransient5xx},
		Case{Meta: Meta{ID: "errors/business-error-kept", Family: "errors", Requirements: []string{"IK-ERRORS-2"}, Level: Should,
			Requirement: "draft §2.6: respond with the result of the completed operation, \"success or an error\" (seeds, Stripe, rocket-rides store a 402).",
			Explanation: "A key whose request ended in a business error keeps that outcome: retries replay it and a changed request under the key does not execute.",
			Needs:       []Need{NeedBusinessError, NeedOracle}},
			PerOperation: true, Skips: skipNoCache4xx, Run: errorsBusinessErrorKept},
		Case{Meta: Meta{ID: "errors/validation-not-stored", Family: "errors", Requirements: []string{"IK-ERRORS-3"}, Level: Should,
			Requirement: "Stripe: if incoming parameters fail validation, no idempotent result is saved; rocket-rides: 422 before the key exists. Profile cache_validation.",
			Explanation: "After an invalid body is rejected under a key, the same invalid body again is refused again (or, where the profile stores validation errors, replayed whole) and never executes, and the corrected body with the same key executes normally (not a mismatch, not the old 4xx).",
			Needs:       []Need{NeedInvalid, NeedEffects}},
			Proof:        ByFresh,
			PerOperation: true, Run: errorsValidationNotStored},
		Case{Meta: Meta{ID: "errors/auth-not-stored", Family: "errors", Requirements: []string{"IK-ERRORS-4"}, Level: Should,
			Requirement: "Stripe: authentication (401) and rate limiting (429) run before the idempotency layer, so they are never stored against the key (trap C11).",
			Explanation: "A request rejected for missing credentials leaves its key unused: the same key with credentials executes.",
			Needs:       []Need{NeedEffects}},
			Proof:        ByFresh,
			PerOperation: true, Run: errorsAuthNotStored},
		Case{Meta: Meta{ID: "errors/failure-releases-key", Family: "errors", Requirements: []string{"IK-ERRORS-5"}, Level: Should,
			Requirement: "Powertools (a raised exception deletes the record), rocket-rides (an unhandled exception releases the lock): after a failed execution a retry runs again, and the key is never left locked in flight.",
			Explanation: "After a 5xx (the transient_error variant stands in for a handler failure) the retry re-executes or replays per cache_5xx, never meeting an in-flight conflict.",
			Needs:       []Need{NeedTransientError, NeedOracle}},
			Proof:        ByFresh,
			PerOperation: true, Run: errorsFailureReleasesKey},
		Case{Meta: Meta{ID: "errors/idempotency-errors-not-stored", Family: "errors", Requirements: []string{"IK-ERRORS-6"}, Level: Should,
			Requirement: "Stripe, Echo (\"nothing was recorded\"): the idempotency errors themselves (400 invalid key, 409 in flight, 422 mismatch) are never stored as the key's outcome (trap C12).",
			Explanation: "A key first met in an invalid field (two lines) executes normally afterwards, and a key answered 422 still replays its original.",
			Needs:       []Need{NeedEffects}},
			Proof:        ByRefusal | ByMismatch,
			PerOperation: true, Run: errorsIdempotencyErrorsNotStored},
	)
}

func errorsTransient5xx(ctx context.Context, e *Env) Verdict {
	first, retry, n, observed, bad := e.transientThenRetry(ctx)
	if bad != nil {
		return *bad
	}
	switch e.Profile.Cache5xx {
	case apispec.Unknown:
		// One execution is a replay only when the retry got the 5xx
		// again; a 409 is the key held in flight (see
		// errors/failure-releases-key).
		mode := "re-executed"
		switch {
		case n >= 2:
		case retry.SameStatus(first) && jsonEqual(first.Body, retry.Body):
			mode = "replayed"
		case retry.Status == http.StatusConflict:
			mode = "refused as a conflict, not executed again (key left locked?)"
		default:
			mode = "neither replayed nor executed again"
		}
		return e.Finding("cache_5xx", mode+": "+observed)
	case apispec.Yes:
		if n != 1 {
			return e.inTTL(e.Unmet("the 5xx replayed with no new execution (profile cache_5xx true)", observed), first, retry)
		}
		if same, diff := e.SameResponse(first, retry); !same {
			return e.inTTL(e.Unmet("the original 5xx response", diff), first, retry)
		}
		return e.Pass(observed)
	}
	if n == 1 && retry.OK() {
		// The failed attempt and the retry that finished its work are one
		// execution where a retry completes failed work (Stripe API v2).
		switch e.Profile.RetryCompletes {
		case apispec.Yes:
			return e.Pass("the retry completed the failed attempt's work, as the profile allows (retry_completes): " + observed)
		case apispec.Unknown:
			return e.Finding("retry_completes", "the retry answered success with no second execution (it completed the failed attempt?): "+observed)
		}
	}
	if n != 2 {
		return e.Unmet("the retry executes again (profile cache_5xx false)", observed)
	}
	return e.Pass(observed)
}

func skipNoCache4xx(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	if p.Cache4xxBusiness == apispec.No {
		return "profile cache_4xx_business is false: a business error does not use up the key"
	}
	return ""
}

func errorsBusinessErrorKept(ctx context.Context, e *Env) Verdict {
	if e.declinesUnseen() {
		return e.declinesUnseenVerdict()
	}
	k := e.NewKey()
	first, body, bad := e.failedFirst(ctx, k, apispec.VariantBusinessError)
	if bad != nil {
		return *bad
	}
	retry := e.Send(ctx, Req{Label: "retry", Key: k, Body: body})
	normal := e.Send(ctx, Req{Label: "the normal request under the same key", Key: k})
	n, err := e.Executions(ctx, k)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	observed := fmt.Sprintf("%d, retry %s, normal request %s; %d executions (oracle)", first.Status, retry.String(), normal.String(), n)
	if v := e.lostConn(retry, normal); v != nil && n == 1 {
		return *v
	}
	if e.Profile.Cache4xxBusiness == apispec.Unknown {
		return e.Finding("cache_4xx_business", observed)
	}
	switch {
	case normal.OK():
		return e.inTTL(e.Unmet("the key keeps its business error: the normal request under it does not execute", observed), first, retry, normal)
	case n != 1:
		return e.inTTL(e.Unmet("one execution: the business error is replayed", observed), first, retry, normal)
	}
	if same, diff := e.SameResponse(first, retry); !same {
		return e.inTTL(e.Unmet("the original error response on retry", diff), first, retry)
	}
	return e.Pass(observed)
}

func errorsValidationNotStored(ctx context.Context, e *Env) Verdict {
	body, v, _ := e.Variant(apispec.VariantInvalid)
	k := e.NewKey()
	bad := e.Send(ctx, Req{Label: "invalid body", Key: k, Body: body})
	switch {
	case !bad.Is4xx():
		return e.Inconclusive("the invalid variant was not rejected with a 4xx: " + bad.String())
	case v.Status != 0 && !bad.HasStatus(v.Status):
		return e.Inconclusive(fmt.Sprintf("the invalid variant was rejected with %s, not the %s variants.invalid.status names: %s", bad.StatusText(), apispec.StatusName(v.Status), bad.String()))
	}
	// The identical resend is judged as well: a stored validation error
	// replays whole, a re-validated one is refused again; neither runs.
	again := e.Send(ctx, Req{Label: "the same invalid body again, same key", Key: k, Body: body})
	fixed := e.Send(ctx, Req{Label: "corrected body, same key", Key: k})
	observed := fmt.Sprintf("%d, again %s, then corrected %s", bad.Status, again.String(), fixed.String())
	if v := e.lostConn(again, fixed); v != nil {
		return *v
	}
	if again.OK() {
		return e.Unmet("the identical invalid request refused again or its error replayed, never executed", observed)
	}
	if e.Profile.CacheValidation == apispec.Yes {
		if same, diff := e.SameResponse(bad, again); !same {
			return e.Unmet("the stored validation error replayed whole (profile cache_validation true)", diff+" ("+observed+")")
		}
	} else if e.Profile.CacheValidation == apispec.No && !again.SameStatus(bad) {
		return e.Unmet("the identical invalid request refused with the same status again (profile cache_validation false: it is validated anew)", observed)
	}
	if e.HasOracle() {
		n, err := e.Executions(ctx, k)
		if err != nil {
			return e.Inconclusive(err.Error())
		}
		observed += fmt.Sprintf("; %d executions (oracle)", n)
		if fixed.OK() && n != 1 {
			return e.Fail("exactly 1 execution", observed)
		}
	}
	switch e.Profile.CacheValidation {
	case apispec.Unknown:
		mode := "not stored (the corrected body executed)"
		if !fixed.OK() {
			mode = "stored (the corrected body was refused)"
		}
		return e.Finding("cache_validation", mode+": "+observed)
	case apispec.Yes:
		if fixed.OK() {
			return e.Unmet("the key keeps its validation error (profile cache_validation true)", observed)
		}
		return e.Pass(observed)
	}
	if !fixed.OK() {
		return e.Unmet("the corrected body executes normally (profile cache_validation false)", observed)
	}
	return e.Pass(observed)
}

func errorsAuthNotStored(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	anon := e.Send(ctx, Req{Label: "no credentials", Key: k, Principal: -1})
	if anon.OK() {
		return e.Skip("the operation answers without credentials: " + anon.String())
	}
	if !anon.Is4xx() {
		return e.Inconclusive("the request without credentials was not refused with a 4xx: " + anon.String())
	}
	authed := e.Send(ctx, Req{Label: "with credentials, same key", Key: k})
	observed := fmt.Sprintf("%d without credentials, then %s", anon.Status, authed.String())
	if v := e.lostConn(authed); v != nil {
		return *v
	}
	if !authed.OK() {
		if fresh, ok := e.usable(ctx, e.Op, 0, e.Op.Body); !ok {
			return e.Inconclusive("the normal call fails with a fresh key too: " + fresh.String())
		}
		return e.Unmet("the authenticated request executes (the 401 was not stored)", observed)
	}
	n, how, _, err := e.Effects(ctx, k, authed)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	observed += fmt.Sprintf("; %d executions (%s)", n, how)
	if n != 1 {
		return e.Fail("exactly 1 execution", observed)
	}
	return e.Pass(observed)
}

func errorsFailureReleasesKey(ctx context.Context, e *Env) Verdict {
	first, retry, n, observed, bad := e.transientThenRetry(ctx)
	if bad != nil {
		return *bad
	}
	replayed := retry.SameStatus(first) && jsonEqual(first.Body, retry.Body)
	switch {
	case n >= 2:
		return e.Pass("re-executed: " + observed)
	case retry.NotReached():
		return *e.lostConn(retry)
	case retry.Err != nil:
		return e.Unmet("a replay or a new execution", observed)
	case retry.OK() && e.Profile.RetryCompletes != apispec.No:
		// Answered, so not locked: one execution in all is a retry that
		// completed the failed attempt's work (Stripe API v2).
		return e.Pass("the retry completed the failed attempt (one execution in all): " + observed)
	case retry.StatusIn(e.Profile.InFlightStatus) && e.Profile.FailedKey == apispec.FailedKeyLocked:
		return e.Pass("the key stays locked after the failure until it expires, as the profile documents (failed_key: locked-until-expiry; crash/ judges the expiry): " + observed)
	case !replayed:
		return e.Unmet("a replay or a new execution, never a conflict after the original failed", "neither replayed nor executed again (key left locked?): "+observed)
	case e.Profile.Cache5xx == apispec.Yes:
		return e.Skip("profile cache_5xx is true: the 5xx is the key's stored outcome (see errors/transient-5xx); " + observed)
	case e.Profile.Cache5xx == apispec.No:
		return e.Unmet("the retry executes again after the failure", observed)
	}
	return e.Finding("cache_5xx", "replayed, the key is not locked: "+observed)
}

func errorsIdempotencyErrorsNotStored(ctx context.Context, e *Env) Verdict {
	var seen []string
	// A 400 for an invalid key field (two lines of the same key) must not
	// bind the key.
	k := e.NewKey()
	twice := e.Send(ctx, Req{Label: "the key in two field lines", KeyLines: []string{e.KeyValue(k), e.KeyValue(k)}, SameAs: k})
	if twice.Is4xx() {
		after := e.Send(ctx, Req{Label: "the key in one line", Key: k})
		seen = append(seen, fmt.Sprintf("two lines %d, then one line %s", twice.Status, after.String()))
		if v := e.lostConn(after); v != nil {
			return *v
		}
		if !after.OK() {
			return e.Unmet("the key executes normally after an invalid-field 400", seen[0])
		}
		n, how, _, err := e.Effects(ctx, k, after)
		if err != nil {
			return e.undecided(err, seen[0])
		}
		if n != 1 {
			return e.Fail("exactly 1 execution", seen[0]+fmt.Sprintf("; %d executions (%s)", n, how))
		}
	} else {
		seen = append(seen, "two field lines not refused ("+twice.String()+"): invalid-key part not applicable")
	}
	// A 422 for a changed payload must not become the key's outcome.
	k2 := e.NewKey()
	first, mis, pr, v := e.mismatchError(ctx, k2)
	if v != nil {
		return *v
	}
	if !mis.Is4xx() {
		return e.Inconclusive(pr.name + " did not produce a mismatch error (see mismatch/changed-body): " + mis.String())
	}
	again := e.Send(ctx, Req{Label: "original again", Key: k2})
	seen = append(seen, fmt.Sprintf("%s %d, then original again %s", pr.name, mis.Status, again.String()))
	observed := fmt.Sprintf("%s (409 in flight: see concurrent/conflict-not-poisoned)", join(seen))
	if v := e.lostConn(again); v != nil {
		return *v
	}
	replayed, err := e.Replayed(ctx, first, again, k2)
	if err != nil {
		return e.undecided(err, observed)
	}
	if !replayed {
		return e.inTTL(e.Unmet("the original's replay after the mismatch error", observed), first, again)
	}
	return e.Pass(observed)
}

package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/wire"
)

// failureRetryable sends variant name (a failing handler) under a fresh
// key, then retries it until a retry is answered with something other
// than an in-flight status: a re-execution (failing again), a replay of
// the failure, anything that shows the key is not wedged. An in-flight
// answer to a retry sent past lease + grace after the failure fails the
// case whatever its level: the API breaks the lease it declares. Without
// a declared lease, past grace + wedgeWait it is a SHOULD unmet. (The
// cases are SHOULD-level so that a config without the variants leaves no
// MUST untested.)
func (e *Env) failureRetryable(ctx context.Context, name string) Verdict {
	body, _, _ := e.Variant(name)
	k := e.NewKey()
	first := e.Send(ctx, Req{Label: "original (" + name + ")", Key: k, Body: body})
	if first.NotReached() || (first.Err == nil && !first.Is5xx()) {
		return e.Inconclusive(fmt.Sprintf("the %s variant did not fail (want a 5xx or a dropped connection): %s", name, first.String()))
	}
	lease, level := e.Target.Lease, Must // unmetAt(Must) is a fail
	if lease <= 0 {
		level = Should
	}
	bound, poll := e.releaseBound()
	if e.Profile.FailedKey == apispec.FailedKeyLocked {
		// Whop: the key answers in flight until it expires; past TTL +
		// grace it must proceed (a SHOULD: the TTL is not a lease).
		if e.Target.TTL <= 0 || e.Target.TTL+e.Profile.Grace > maxLockedWait {
			return e.Skip(fmt.Sprintf("profile failed_key is locked-until-expiry and the TTL (%s) is not within %s: a run cannot wait for the key to expire", e.Target.TTL, maxLockedWait))
		}
		lease, level = e.Target.TTL, Should
		bound, poll = e.Target.TTL+e.Profile.Grace+leaseMargin, max(e.Target.TTL/10, 100*time.Millisecond)
	}
	failed := first.End
	limit := failed.Add(bound)
	var timeline []string
	for attempt := 1; ; attempt++ {
		r := e.Send(ctx, Req{Label: fmt.Sprintf("retry %d", attempt), Key: k, Body: body})
		timeline = append(timeline, fmt.Sprintf("+%s %s", r.Start.Sub(failed).Round(time.Millisecond), statusOf(r)))
		observed := fmt.Sprintf("the %s variant answered %s; retries after it: %s", name, statusOf(first), strings.Join(timeline, ", "))
		late := r.Start.After(limit)
		switch {
		case r.NotReached() && late:
			return *e.lostConn(r)
		case r.NotReached(), r.StatusIn(e.Profile.InFlightStatus), e.unproven(r):
			// The mismatch answer to the unchanged retry refuses it as
			// surely as the in-flight one: the retry did not proceed.
			if late {
				expected := fmt.Sprintf("a retry proceeds once lease %s + grace %s have passed", lease, e.Profile.Grace)
				if e.Profile.FailedKey == apispec.FailedKeyLocked {
					expected = fmt.Sprintf("a retry proceeds once the key's TTL %s + grace %s have passed (failed_key: locked-until-expiry)", lease, e.Profile.Grace)
				}
				if lease <= 0 {
					expected = fmt.Sprintf("a retry proceeds within grace %s + %s of the failure (no lease declared: declare one to judge this at MUST)", e.Profile.Grace, wedgeWait)
				}
				still := ": the key is still in flight"
				if e.unproven(r) && !r.StatusIn(e.Profile.InFlightStatus) {
					still = ": the key still refuses the unchanged retry (" + e.signal(r) + " answer)"
				}
				return e.unmetAt(level, expected, observed+still)
			}
		default:
			return e.Pass(observed)
		}
		next := time.Now().Add(poll)
		if next.After(limit) && time.Now().Before(limit) {
			next = limit.Add(10 * time.Millisecond) // one decisive retry just past the bound
		}
		if err := clock.Until(ctx, next); err != nil {
			return e.Inconclusive("case budget ran out: " + observed)
		}
	}
}

// failedFirst sends variant name under k and checks it failed as promised
// (5xx for transient_error, 4xx for business_error).
func (e *Env) failedFirst(ctx context.Context, k, name string) (wire.Resp, []byte, *Verdict) {
	body, v, _ := e.Variant(name)
	r := e.Send(ctx, Req{Label: "original (" + name + ")", Key: k, Body: body})
	okClass := r.Is5xx()
	if name == apispec.VariantBusinessError {
		okClass = r.Is4xx()
	}
	if !okClass || (v.Status != 0 && !r.HasStatus(v.Status)) {
		x := e.Inconclusive(fmt.Sprintf("the %s variant did not fail as configured: %s", name, r.String()))
		return r, body, &x
	}
	return r, body, nil
}

// transientThenRetry sends the transient-error variant under a fresh key,
// retries it unchanged and counts the key's executions.
func (e *Env) transientThenRetry(ctx context.Context) (first, retry wire.Resp, n int, observed string, v *Verdict) {
	k := e.NewKey()
	first, body, bad := e.failedFirst(ctx, k, apispec.VariantTransientError)
	if bad != nil {
		return first, retry, 0, "", bad
	}
	retry = e.Send(ctx, Req{Label: "retry", Key: k, Body: body})
	n, err := e.Executions(ctx, k)
	if err != nil {
		x := e.Inconclusive(err.Error())
		return first, retry, 0, "", &x
	}
	if v := e.lostConn(retry); v != nil && n < 2 {
		return first, retry, n, "", v
	}
	return first, retry, n, fmt.Sprintf("%s then %s; %d executions (oracle)", first.StatusText(), retry.String(), n), nil
}

// releaseBound is how long after a failed execution its key may still
// answer "in flight" (the declared lease and grace, past which a retry
// proceeds; without a lease, grace + wedgeWait) and how often to retry
// it within that time.
func (e *Env) releaseBound() (bound, poll time.Duration) {
	bound = e.Target.Lease + e.Profile.Grace + leaseMargin
	if e.Target.Lease <= 0 {
		bound = e.Profile.Grace + wedgeWait
	}
	return bound, min(max(bound/10, 100*time.Millisecond), time.Second)
}

// maxLockedWait bounds how long a case waits for a key locked until its
// expiry (failed_key: locked-until-expiry) to proceed.
const maxLockedWait = 2 * time.Minute

// wedgeWait is how long after a failed execution a key may still answer
// "in flight" when the target declares no lease (the lease, where
// declared, bounds it instead).
const wedgeWait = 2 * time.Second

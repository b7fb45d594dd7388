package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/target"
)

// wedgeWait is how long after a failed execution a key may still answer
// "in flight" when the target declares no lease (the lease, where
// declared, bounds it instead).
const wedgeWait = 2 * time.Second

// CRASH: a handler that crashes or times out must not leave its key "in
// progress" for ever (users' most reported wedge): the process is alive
// and knows the execution ended, so the key is retryable at once, and in
// any case once the lease has passed.
func init() {
	register(
		Case{Meta: Meta{ID: "crash/handler-crash", Family: "crash", Requirements: []string{"IK-LEASE-1", "IK-ERRORS-5"}, Level: Should,
			Requirement: "seeds (locked_until), rocket-rides (an unhandled exception releases the lock), Powertools (a raised exception deletes the record): after the handler crashed, retries may get 409 until the lease ends; after lease + grace a retry proceeds. Never blocked forever: past a declared lease a fail, without one a SHOULD.",
			Explanation: "After the crash variant's handler failed (5xx or a dropped connection), a retry with the same key is not answered \"in flight\" past the lease + grace.",
			Needs:       []Need{NeedCrash}},
			PerOperation: true, Run: func(ctx context.Context, e *Env) Verdict { return e.failureRetryable(ctx, target.VariantCrash) }},
		Case{Meta: Meta{ID: "crash/handler-timeout", Family: "crash", Requirements: []string{"IK-LEASE-1", "IK-ERRORS-5"}, Level: Should,
			Requirement: "seeds, Powertools (in_progress_expiry): a handler that timed out (a downstream that never answered) has ended; retries may get 409 until the lease ends, after lease + grace a retry proceeds. Never blocked forever: past a declared lease a fail, without one a SHOULD.",
			Explanation: "After the timeout variant's handler gave up (5xx, often 504, or no answer), a retry with the same key is not answered \"in flight\" past the lease + grace.",
			Needs:       []Need{NeedTimeout}},
			PerOperation: true, Run: func(ctx context.Context, e *Env) Verdict { return e.failureRetryable(ctx, target.VariantTimeout) }},
	)
}

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
	if first.StaleConn() || (first.Err == nil && !first.Is5xx()) {
		return e.Inconclusive(fmt.Sprintf("the %s variant did not fail (want a 5xx or a dropped connection): %s", name, first.String()))
	}
	lease, level := e.Target.Lease, Must // unmetAt(Must) is a fail
	bound := lease + e.Profile.Grace + leaseMargin
	if lease <= 0 {
		bound, level = e.Profile.Grace+wedgeWait, Should
	}
	failed := first.End
	limit := failed.Add(bound)
	poll := min(max(bound/10, 100*time.Millisecond), time.Second)
	var timeline []string
	for attempt := 1; ; attempt++ {
		r := e.Send(ctx, Req{Label: fmt.Sprintf("retry %d", attempt), Key: k, Body: body})
		timeline = append(timeline, fmt.Sprintf("+%s %s", r.Start.Sub(failed).Round(time.Millisecond), statusOf(r)))
		observed := fmt.Sprintf("the %s variant answered %s; retries after it: %s", name, statusOf(first), strings.Join(timeline, ", "))
		late := r.Start.After(limit)
		switch {
		case r.StaleConn() && late:
			return *e.lostConn(r)
		case r.StaleConn(), r.Err == nil && e.Profile.InFlightOK(r.Status):
			if late {
				expected := fmt.Sprintf("a retry proceeds once lease %s + grace %s have passed", lease, e.Profile.Grace)
				if lease <= 0 {
					expected = fmt.Sprintf("a retry proceeds within grace %s + %s of the failure (no lease declared: declare one to judge this at MUST)", e.Profile.Grace, wedgeWait)
				}
				return e.unmetAt(level, expected, observed+": the key is still in flight")
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

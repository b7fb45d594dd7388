package scenarios

import (
	"context"

	"github.com/idemcheck/idemcheck/apispec"
)

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
			Proof:        ByFresh,
			PerOperation: true, Run: func(ctx context.Context, e *Env) Verdict { return e.failureRetryable(ctx, apispec.VariantCrash) }},
		Case{Meta: Meta{ID: "crash/handler-timeout", Family: "crash", Requirements: []string{"IK-LEASE-1", "IK-ERRORS-5"}, Level: Should,
			Requirement: "seeds, Powertools (in_progress_expiry): a handler that timed out (a downstream that never answered) has ended; retries may get 409 until the lease ends, after lease + grace a retry proceeds. Never blocked forever: past a declared lease a fail, without one a SHOULD.",
			Explanation: "After the timeout variant's handler gave up (5xx, often 504, or no answer), a retry with the same key is not answered \"in flight\" past the lease + grace.",
			Needs:       []Need{NeedTimeout}},
			Proof:        ByFresh,
			PerOperation: true, Run: func(ctx context.Context, e *Env) Verdict { return e.failureRetryable(ctx, apispec.VariantTimeout) }},
	)
}

package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/internal/expiry"
	"github.com/idemcheck/idemcheck/wire"
)

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
	if !executed && retry.NotReached() {
		return false, false, observed, wire.ErrStaleConn
	}
	return executed, retry.OK() && !executed, observed, nil
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

// WithinTTL reports whether every retry reached the server (Resp.ReachedBy)
// within TTL − margin of orig's start (expiry.SentInside): the server then
// looked the key up while its record must still exist, however it counts
// its TTL (from the claim at the earliest). Always true when no TTL is
// declared.
func (e *Env) WithinTTL(orig wire.Resp, retries ...wire.Resp) bool {
	for _, r := range retries {
		if !expiry.SentInside(orig.Start, r.ReachedBy(), e.Target.TTL, e.Profile.Margin) {
			return false
		}
	}
	return true
}

// inTTL is v for a case that expects retries to replay orig (or not to
// execute again), unless v judges against them (Fail, Warn) and a declared
// clock may have excused them: a retry sent outside the WithinTTL window
// (the record may legally have expired), or one answered past the lease
// while orig ran (leaseTakeover). The verdict is then Inconclusive. A
// replay seen late is still a replay, so passes stand.
func (e *Env) inTTL(v Verdict, orig wire.Resp, retries ...wire.Resp) Verdict {
	if v.Status != Fail && v.Status != Warn {
		return v
	}
	if !e.WithinTTL(orig, retries...) {
		last := orig.Start
		for _, r := range retries {
			if r.ReachedBy().After(last) {
				last = r.ReachedBy()
			}
		}
		return e.Missed(fmt.Sprintf("a stall: the retry may have reached the server as late as %s after the original started (its answer less the work it takes), past TTL %s − margin %s, so the key may legally have expired (would have been %s: expected %s, observed %s)",
			last.Sub(orig.Start).Round(time.Millisecond), e.Target.TTL, e.Profile.Margin, v.Status, v.Expected, v.Observed))
	}
	if x := e.leaseTakeover(v, orig, retries...); x != nil {
		return *x
	}
	return v
}

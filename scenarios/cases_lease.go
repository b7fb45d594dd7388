package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// leaseMargin is how far past the declared lease the retry is sent, so
// that it lands after expiry even with a coarse server clock.
const leaseMargin = 300 * time.Millisecond

// LEASE: in-flight records after crashes and past their lease (spec.md
// IK-LEASE-*). LEASE-1 needs a target the harness can kill mid-flight;
// LEASE-3 only needs a slow variant that outlives the declared lease.
func init() {
	register(
		Case{Meta: Meta{ID: "lease/crash-recovers", Family: "lease", Requirements: []string{"IK-LEASE-1"}, Level: Should,
			Requirement: "seeds (locked_until), rocket-rides IDEMPOTENCY_KEY_LOCK_TIMEOUT: if the first attempt dies mid-flight, retries get 409 until the lease ends; after lease + grace a retry proceeds and completes. Never blocked forever.",
			Explanation: "A request killed mid-flight (SIGKILL of the managed target) does not block its key beyond the lease + grace.",
			Needs:       []Need{NeedSlow, NeedLease, NeedTargetCmd}},
			Proof:        ByFresh,
			PerOperation: true, UsesOracle: true, Run: leaseCrashRecovers},
		Case{Meta: Meta{ID: "lease/slow-outlives-lease", Family: "lease", Requirements: []string{"IK-LEASE-3"}, Level: Should,
			Requirement: "seeds, trap C17: a legitimately slow request that outlives the lease must not lead to a second concurrent execution, or the profile must document that risk.",
			Explanation: "A same-key retry sent after the lease ran out, while the slow original still runs, does not execute a second time.",
			Needs:       []Need{NeedSlow, NeedLease, NeedEffects}},
			PerOperation: true, Skips: skipSlowWithinLease, Run: leaseSlowOutlivesLease},
	)
}

// leaseCrashRecovers sends the slow variant, SIGKILLs the managed target
// while it is provably in flight, restarts it and retries the key until
// the declared lease plus the profile's grace has passed.
func leaseCrashRecovers(ctx context.Context, e *Env) Verdict {
	m := e.Managed()
	if m == nil {
		return e.Skip("needs " + string(NeedTargetCmd) + ": a managed target the harness can SIGKILL mid-flight and restart")
	}
	body, v, _ := e.Variant(apispec.VariantSlow)
	lease, grace := e.Target.Lease, e.Profile.Grace
	k := e.NewKey()
	sent := time.Now()
	wait := e.startInFlight(ctx, k, Req{Label: fmt.Sprintf("slow original (%s), killed mid-flight", v.Duration), Key: k, Body: body}, v.Duration)
	how := fmt.Sprintf("%s of a %s call elapsed, no oracle", time.Since(sent).Round(time.Millisecond), v.Duration)
	var notStarted error // the oracle cannot show the original running
	if e.HasOracle() {
		n, err := e.Executions(ctx, k)
		how = fmt.Sprintf("the oracle counted %d executions", n)
		switch {
		case err != nil:
			notStarted = err
		case n < 1:
			notStarted = fmt.Errorf("the oracle did not count the slow original within %s", v.Duration/2)
		}
	}
	m.Kill() // also when notStarted: the slow original must not complete and stay unread
	killedAt := time.Since(sent)
	slow := wait()
	if notStarted != nil {
		if err := m.Restart(ctx); err != nil {
			return e.Inconclusive(fmt.Sprintf("%v; restart: %v", notStarted, err))
		}
		return e.Inconclusive(notStarted.Error())
	}
	if slow.Err == nil {
		return e.Inconclusive(fmt.Sprintf("the slow original answered %s before the kill at +%s; lengthen the slow variant", slow.String(), killedAt.Round(time.Millisecond)))
	}
	if err := m.Restart(ctx); err != nil {
		return e.Inconclusive(err.Error())
	}
	e.carrier.Close() // every pooled connection went with the old process
	restarted := time.Since(sent)
	limit := sent.Add(lease + grace + leaseMargin)
	poll := min(max(lease/10, 100*time.Millisecond), 2*time.Second)
	prefix := fmt.Sprintf("killed at +%s (in flight: %s), restarted at +%s", killedAt.Round(time.Millisecond), how, restarted.Round(time.Millisecond))
	var timeline []string
	for attempt := 1; ; attempt++ {
		r := e.Send(ctx, Req{Label: fmt.Sprintf("retry %d after the restart", attempt), Key: k, Body: body})
		at := r.Start.Sub(sent).Round(time.Millisecond)
		timeline = append(timeline, fmt.Sprintf("+%s %s", at, statusOf(r)))
		observed := prefix + "; retries: " + strings.Join(timeline, ", ")
		late := r.Start.After(limit)
		switch {
		case r.OK() && attempt == 1 && r.Start.Before(sent.Add(lease)):
			return e.Pass(observed, "the key was fresh before its lease ended: the store lost the in-flight record across the restart (legal here; durability is not this case's requirement)")
		case r.OK():
			return e.Pass(observed)
		case r.Is4xx() && r.Status != http.StatusConflict && !r.StatusIn(e.Profile.InFlightStatus):
			return e.Unmet("retries answer an in-flight status until the lease ends, then proceed and complete", observed)
		case late && r.NotReached():
			return *e.lostConn(r)
		case late:
			return e.Unmet(fmt.Sprintf("after lease %s + grace %s the retry proceeds and completes", lease, grace), observed+": still not completed past lease + grace")
		}
		next := time.Now().Add(poll)
		if next.After(limit) && time.Now().Before(limit) {
			next = limit.Add(10 * time.Millisecond) // one decisive retry just past the bound
		}
		select {
		case <-ctx.Done():
			return e.Inconclusive("case budget ran out: " + observed)
		case <-time.After(time.Until(next)):
		}
	}
}

func skipSlowWithinLease(t *apispec.Target, _ *apispec.Profile, op *apispec.Operation) string {
	if d := op.Variants[apispec.VariantSlow].Duration; d < t.Lease+2*leaseMargin {
		return fmt.Sprintf("the slow variant (%s) does not outlive the declared lease (%s) by %s; declare a shorter lease or a slower variant", d, t.Lease, 2*leaseMargin)
	}
	return ""
}

func leaseSlowOutlivesLease(ctx context.Context, e *Env) Verdict {
	k, slow, retry := e.retryPastLease(ctx)
	if !slow.OK() {
		return e.Inconclusive("the slow variant did not succeed: " + slow.String())
	}
	if !retry.Start.Before(slow.End) {
		return e.Missed("could not overlap: the retry was sent after the slow original completed")
	}
	n, how, _, err := e.Effects(ctx, k, slow, retry)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	observed := fmt.Sprintf("retry at lease+%s answered %s; %d executions (%s)", leaseMargin, retry.String(), n, how)
	if n != 1 {
		return e.Unmet("1 execution: the expired lease of a running request does not let a retry execute", observed)
	}
	if v := e.lostConn(retry); v != nil {
		return *v // the retry may never have reached the server
	}
	return e.Pass(observed)
}

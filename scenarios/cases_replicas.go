package scenarios

import (
	"context"
	"fmt"
)

// NeedReplicas: at least two base URLs of one API (replicas, --replica).
const NeedReplicas Need = "replicas"

// REPLICAS: one API served by several processes on one store must keep
// every promise across them: a lock or cache local to one process is the
// commonest idempotency bug in production and invisible on one replica.
// Replica A is the base URL; B is the first other replica.
func init() {
	register(
		Case{Meta: Meta{ID: "replicas/burst-across", Family: "replicas", Requirements: []string{"IK-CONCURRENT-2"}, Level: Must,
			Requirement: "All sources: N parallel identical requests with the same key cause exactly one execution; each response is the success (original or replay) or an in-flight conflict — whichever replica receives them.",
			Explanation: "Rounds of same-key bursts (burst_rounds × burst_size, 8 × 32 by default) spread round-robin over the replicas and released together each produce one execution and one created resource.",
			Needs:       []Need{NeedReplicas, NeedEffects}},
			PerOperation: true, Run: replicasBurstAcross},
		Case{Meta: Meta{ID: "replicas/in-flight-other-replica", Family: "replicas", Requirements: []string{"IK-CONCURRENT-1"}, Level: Should,
			Requirement: "draft §2.6/§2.7: if the original request is still being processed, the resource SHOULD respond with a resource conflict error (409); a server that waits and then replays is tolerated when the profile allows blocking.",
			Explanation: "A duplicate sent to replica B while the original provably runs on replica A gets the in-flight conflict (or, if blocking is allowed, the replay) and never executes again.",
			Needs:       []Need{NeedReplicas, NeedSlow, NeedEffects}},
			Proof:        ByInFlight,
			PerOperation: true, Run: replicasInFlightOtherReplica},
		Case{Meta: Meta{ID: "replicas/replay-other-replica", Family: "replicas", Requirements: []string{"IK-REPLAY-1", "IK-REPLAY-2", "IK-REPLAY-3"}, Level: Should,
			Requirement: "draft §2.6: for a retried request whose original completed, the resource SHOULD respond with the result of the previously completed operation (compared per profile: bytes, JSON or status).",
			Explanation: "A retry on replica B of a request completed on replica A replays the original (status and body per the profile's comparison) and does not execute again.",
			Needs:       []Need{NeedReplicas, NeedEffects}},
			PerOperation: true, Run: replicasReplayOtherReplica},
		Case{Meta: Meta{ID: "replicas/mismatch-other-replica", Family: "replicas", Requirements: []string{"IK-MISMATCH-1"}, Level: Should,
			Requirement: "draft §2.7: if there is an attempt to reuse an idempotency key with a different request payload, the resource SHOULD reply with HTTP 422 (status per profile).",
			Explanation: "A changed body on replica B under a key completed on replica A gets the profile's mismatch error and executes nothing.",
			Needs:       []Need{NeedReplicas, NeedEffects}},
			Proof:        ByMismatch,
			PerOperation: true, Run: replicasMismatchOtherReplica},
		Case{Meta: Meta{ID: "replicas/other-user-other-replica", Family: "replicas", Requirements: []string{"IK-SCOPE-1"}, Level: Must,
			Requirement: "draft §5 (composite key, data leaks): the same key sent by a second principal is independent; it never returns the first principal's stored response.",
			Explanation: "A second principal sending on replica B a key the first completed on replica A executes on its own and never receives the first one's response.",
			Needs:       []Need{NeedReplicas, NeedSecondPrincipal}},
			Proof:        ByFresh,
			PerOperation: true, UsesOracle: true, Run: replicasOtherUser},
		Case{Meta: Meta{ID: "replicas/ttl-other-replica", Family: "replicas", Requirements: []string{"IK-EXPIRY-1"}, Level: Should,
			Requirement: "draft §2.3 (keys MAY expire under a published policy); profile ttl and margin: a retry before TTL − margin still gets the original result, on any replica.",
			Explanation: "A retry on replica B shortly before the declared TTL of a request completed on replica A replays it and does not execute again.",
			Needs:       []Need{NeedReplicas, NeedTTL, NeedEffects}},
			Proof:        ByFresh,
			PerOperation: true, Skips: expiryWaitTooLong, MinTTL: ttlPastMargin, Run: replicasTTLOtherReplica},
	)
}

func replicasBurstAcross(ctx context.Context, e *Env) Verdict {
	return e.burstRounds(ctx, e.Target.Replicas...)
}

func replicasInFlightOtherReplica(ctx context.Context, e *Env) Verdict {
	return e.inFlightDuplicate(ctx, e.otherReplica())
}

func replicasReplayOtherReplica(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	retry := e.Send(ctx, Req{Label: "retry on replica B", Key: k, Base: e.otherReplica()})
	n, how, _, err := e.Effects(ctx, k, first, retry)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	observed := fmt.Sprintf("original on A %d, retry on B %s; %d executions (%s)", first.Status, retry.String(), n, how)
	if n != 1 || len(e.DistinctIDs(first, retry)) > 1 {
		return e.inTTL(e.Fail("exactly 1 execution across replicas", observed), first, retry)
	}
	if v := e.lostConn(retry); v != nil {
		return *v
	}
	if same, diff := e.SameResponse(first, retry); !same {
		return e.inTTL(e.Unmet("the original response ("+e.Profile.ReplayCompare+" comparison)", diff+"; "+observed), first, retry)
	}
	return e.Pass(observed + "; replay equals the original (" + e.Profile.ReplayCompare + ")")
}

func replicasMismatchOtherReplica(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	pr := e.firstProbe()
	changed, err := pr.on(e.Body())
	if err != nil {
		return e.Skip(err.Error())
	}
	req := pr.req("same key, "+pr.name+", on replica B", k, changed)
	req.Base = e.otherReplica()
	r := e.Send(ctx, req)
	n, how, _, err := e.Effects(ctx, k, first, r)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	observed := fmt.Sprintf("%s on replica B answered %s; %d executions (%s)", pr.name, r.String(), n, how)
	expected := fmt.Sprintf("%v, no execution, no replay of the old response", e.Profile.MismatchStatus)
	switch {
	case n != 1:
		return e.inTTL(e.Fail("exactly 1 execution across replicas", observed), first, r)
	case r.NotReached():
		return *e.lostConn(r)
	case r.OK() && e.replayOf(first, r, n, how):
		return e.inTTL(e.Fail(expected, "the original's response for a different payload: "+observed), first, r)
	case r.OK():
		return e.inTTL(e.Fail(expected, "executed the different payload: "+observed), first, r)
	case r.StatusIn(e.Profile.MismatchStatus):
		return e.Pass(observed)
	}
	return e.inTTL(e.Unmet(expected, observed), first, r)
}

func replicasOtherUser(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	a, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	b := e.Send(ctx, Req{Label: "second principal, same key, on replica B", Key: k, Principal: 1, Base: e.otherReplica()})
	return e.judgeOtherUser(ctx, k, a, b, e.Body())
}

func replicasTTLOtherReplica(ctx context.Context, e *Env) Verdict {
	return e.replaysBeforeTTL(ctx, e.otherReplica())
}

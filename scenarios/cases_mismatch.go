package scenarios

import (
	"context"
	"fmt"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// MISMATCH: the same key with a materially different payload is a client
// error; it executes nothing and leaves the original record intact
// (draft §2.7).
func init() {
	register(
		Case{Meta: Meta{ID: "mismatch/changed-body", Family: "mismatch", Requirements: []string{"IK-MISMATCH-1", "IK-MISMATCH-5"}, Level: Should,
			Requirement: "draft §2.7: if there is an attempt to reuse an idempotency key with a different request payload, the resource SHOULD reply with HTTP 422 (status per profile).",
			Explanation: "Every configured mutation under a used key (of the body, the query or a header field; and an AEP-155 key's first_sent, changed) gets the profile's mismatch error, or for another query a fresh execution where query_mismatch allows it; a replay of the old response, or an execution of a changed body or header, fails.",
			Needs:       []Need{NeedEffects}},
			Proof:        ByMismatch,
			PerOperation: true, Skips: skipNoMutations, Run: mismatchChangedBody},
		Case{Meta: Meta{ID: "mismatch/added-field", Family: "mismatch", Requirements: []string{"IK-MISMATCH-1", "IK-MISMATCH-5"}, Level: Should,
			Requirement: "draft §2.7: a different request payload under a used key SHOULD get HTTP 422 (status per profile); an added member makes the payload different.",
			Explanation: "The body plus a member idemcheck adds under a used key gets the mismatch error (a replay warns: unknown members may be outside the fingerprint); an execution fails.",
			Needs:       []Need{NeedEffects}},
			Proof:        ByMismatch,
			PerOperation: true, Unfit: needs[wire.RawBodies]("the payload is re-encoded inside the carrier's message or envelope: a protobuf message has no member outside its schema to add, and a GraphQL operation reads only the variables it declares (mutations: changes a field for mismatch/changed-body)"), Run: mismatchAddedField},
		Case{Meta: Meta{ID: "mismatch/problem-link", Family: "mismatch", Requirements: []string{"IK-MISMATCH-2", "IK-PROBLEM-1", "IK-PROBLEM-2"}, Level: Should,
			Requirement: "draft §2.7: the 422 response SHOULD carry a body or Link header pointing to relevant documentation (problem+json type, or Link rel=\"describedby\").",
			Explanation: "The mismatch error links to the idempotency documentation."},
			Proof:        ByMismatch,
			PerOperation: true, Skips: skipsAll(skipNoProblemJSON, skipStaleReplay), Unfit: unlessProblems, Run: mismatchProblemLink},
		Case{Meta: Meta{ID: "mismatch/original-survives", Family: "mismatch", Requirements: []string{"IK-MISMATCH-3"}, Level: Must,
			Requirement: "A mismatched request executes nothing and the original record survives: replaying the original payload still returns the original response.",
			Explanation: "After a mismatch error, the original request with its key still replays the original response, with one execution in all.",
			Needs:       []Need{NeedEffects}},
			Proof:        ByMismatch,
			PerOperation: true, Run: mismatchOriginalSurvives},
		Case{Meta: Meta{ID: "mismatch/repeat-fails-again", Family: "mismatch", Requirements: []string{"IK-MISMATCH-4"}, Level: Must,
			Requirement: "draft §2.7: clients MUST correct the request before retrying, or the resource MUST fail the request and return one of the above errors.",
			Explanation: "Repeating the uncorrected mismatched request fails again the same way; the error is never turned into a stored success."},
			Proof:        ByMismatch,
			PerOperation: true, Run: mismatchRepeatFailsAgain},
	)
}

func skipNoMutations(_ *apispec.Target, _ *apispec.Profile, op *apispec.Operation) string {
	if len(op.MutationsOrDerived()) == 0 {
		return "the operation has no mutations configured (operations[].mutations: patch, query or headers) and its body no number or boolean to derive one from"
	}
	return ""
}

func mismatchChangedBody(ctx context.Context, e *Env) Verdict {
	var probes []probe
	for _, m := range e.Op.MutationsOrDerived() {
		probes = append(probes, probeOf(m))
	}
	if e.Target.Key != nil && e.Target.Key.FirstSent {
		probes = append(probes, firstSentProbe())
	}
	return e.judgeProbes(ctx, probes)
}

func mismatchAddedField(ctx context.Context, e *Env) Verdict {
	return e.judgeProbes(ctx, []probe{addedFieldProbe()})
}

// skipStaleReplay: where a changed payload replays the stored answer (no
// fingerprint at all: stale_replay_on_mismatch true) there is no mismatch
// error to judge.
func skipStaleReplay(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	if p.StaleReplayOnMismatch == apispec.Yes {
		return NotApplicable + " where a changed payload replays the stored answer (profile stale_replay_on_mismatch true): there is no mismatch error"
	}
	return ""
}

// skipsAll is the first reason of skips.
func skipsAll(skips ...func(*apispec.Target, *apispec.Profile, *apispec.Operation) string) func(*apispec.Target, *apispec.Profile, *apispec.Operation) string {
	return func(t *apispec.Target, p *apispec.Profile, op *apispec.Operation) string {
		for _, s := range skips {
			if why := s(t, p, op); why != "" {
				return why
			}
		}
		return ""
	}
}

func skipNoProblemJSON(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	if p.ProblemJSON == apispec.No {
		return "profile problem_json is false"
	}
	return ""
}

func mismatchProblemLink(ctx context.Context, e *Env) Verdict {
	_, r, pr, v := e.mismatchError(ctx, e.NewKey())
	if v != nil {
		return *v
	}
	if !r.Is4xx() || e.unproven(r) {
		return e.Inconclusive(pr.name + " did not produce a mismatch error (see mismatch/changed-body): " + r.String())
	}
	return e.docLinkVerdict(r)
}

func mismatchOriginalSurvives(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, mis, pr, v := e.mismatchError(ctx, k)
	if v != nil {
		return *v
	}
	again := e.Send(ctx, Req{Label: "original again", Key: k})
	n, how, _, err := e.Effects(ctx, k, first, mis, again)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	observed := fmt.Sprintf("%s answered %s; original again answered %s; %d executions (%s)", pr.name, mis.String(), again.String(), n, how)
	if x := e.extraEventOnly(n, first, mis, again); x != nil {
		return *x
	}
	if n != 1 {
		return e.inTTL(e.Fail("exactly 1 execution", observed), first, again)
	}
	// Status fidelity is replay/same-status's concern; here the record must
	// still be there and name the same resource.
	if v := e.lostConn(again); v != nil {
		return *v
	}
	if replayed, err := e.Replayed(ctx, first, again, k); err != nil {
		return e.undecided(err, observed)
	} else if !replayed {
		return e.inTTL(e.Fail("the original response again (same resource)", observed), first, again)
	}
	return e.Pass(observed)
}

func mismatchRepeatFailsAgain(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, mis, pr, v := e.mismatchError(ctx, k)
	if v != nil {
		return *v
	}
	if v := e.lostConn(mis); v != nil {
		return *v
	}
	switch {
	case mis.Err != nil:
		return e.Inconclusive(pr.name + " got no answer: " + mis.String())
	case mis.OK() && !pr.generated && e.Profile.StaleReplayOnMismatch != apispec.No && e.staleReplay(ctx, k, first, mis):
		// No fingerprint (Worldline, Qonto): the changed request got the
		// stored answer and ran nothing, as the profile allows; there is
		// no error to repeat (mismatch/changed-body judges the replay).
		if e.Profile.StaleReplayOnMismatch == apispec.Unknown {
			return e.Finding("stale_replay_on_mismatch", pr.name+" under the used key got the stored answer, no error: "+mis.String())
		}
		return e.Skip(NotApplicable + " where a changed payload replays the stored answer (stale_replay_on_mismatch): " + pr.name + " got " + mis.String())
	case mis.OK() && !pr.generated:
		// A configured mutation is material: its success under the used
		// key did not fail the request, which this MUST forbids.
		return e.inTTL(e.Fail("an error (the changed request failed), then the same error again", pr.name+" under the used key succeeded: "+mis.String()), first, mis)
	case mis.OK():
		return e.Inconclusive(pr.name + " (a member idemcheck made up, which a partial fingerprint may leave out) did not fail in the first place (see mismatch/added-field): " + mis.String())
	}
	if e.unproven(mis) {
		// The in-flight answer to a changed request whose original has
		// completed is no mismatch error: there is none to repeat.
		return e.Inconclusive(fmt.Sprintf("%s got the profile's in-flight answer after the original completed, not a mismatch error (see mismatch/changed-body): %s", pr.name, mis.String()))
	}
	again := e.Send(ctx, pr.req("same key, "+pr.name+" again", k, e.Body(pr.patch)))
	observed := fmt.Sprintf("%s then %s", mis.StatusText(), again.String())
	if v := e.lostConn(again); v != nil {
		return *v
	}
	if again.OK() {
		return e.inTTL(e.Fail(fmt.Sprintf("%d again", mis.Status), observed), first, again)
	}
	if again.Status != mis.Status {
		return e.inTTL(e.Unmet(fmt.Sprintf("%d again", mis.Status), observed), first, again)
	}
	return e.Pass(observed)
}

// staleReplay reports that r, the answer to a changed request under k,
// is first's stored answer replayed with no new execution.
func (e *Env) staleReplay(ctx context.Context, k string, first, r wire.Resp) bool {
	replayed, err := e.Replayed(ctx, first, r, k)
	return err == nil && replayed
}

package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// MISMATCH: the same key with a materially different payload is a client
// error; it executes nothing and leaves the original record intact
// (draft §2.7).
func init() {
	register(
		Case{Meta: Meta{ID: "mismatch/changed-body", Family: "mismatch", Requirements: []string{"IK-MISMATCH-1", "IK-MISMATCH-5"}, Level: Should,
			Requirement: "draft §2.7: if there is an attempt to reuse an idempotency key with a different request payload, the resource SHOULD reply with HTTP 422 (status per profile).",
			Explanation: "Every configured mutation of the body under a used key gets the profile's mismatch error; a replay of the old response or an execution fails.",
			Needs:       []Need{NeedEffects}},
			PerOperation: true, Skips: skipNoMutations, Run: mismatchChangedBody},
		Case{Meta: Meta{ID: "mismatch/added-field", Family: "mismatch", Requirements: []string{"IK-MISMATCH-1", "IK-MISMATCH-5"}, Level: Should,
			Requirement: "draft §2.7: a different request payload under a used key SHOULD get HTTP 422 (status per profile); an added member makes the payload different.",
			Explanation: "The body plus a member idemcheck adds under a used key gets the mismatch error (a replay warns: unknown members may be outside the fingerprint); an execution fails.",
			Needs:       []Need{NeedEffects}},
			PerOperation: true, Run: mismatchAddedField},
		Case{Meta: Meta{ID: "mismatch/problem-link", Family: "mismatch", Requirements: []string{"IK-MISMATCH-2", "IK-PROBLEM-1", "IK-PROBLEM-2"}, Level: Should,
			Requirement: "draft §2.7: the 422 response SHOULD carry a body or Link header pointing to relevant documentation (problem+json type, or Link rel=\"describedby\").",
			Explanation: "The mismatch error links to the idempotency documentation."},
			PerOperation: true, Skips: skipNoProblemJSON, Run: mismatchProblemLink},
		Case{Meta: Meta{ID: "mismatch/original-survives", Family: "mismatch", Requirements: []string{"IK-MISMATCH-3"}, Level: Must,
			Requirement: "A mismatched request executes nothing and the original record survives: replaying the original payload still returns the original response.",
			Explanation: "After a mismatch error, the original request with its key still replays the original response, with one execution in all.",
			Needs:       []Need{NeedEffects}},
			PerOperation: true, Run: mismatchOriginalSurvives},
		Case{Meta: Meta{ID: "mismatch/repeat-fails-again", Family: "mismatch", Requirements: []string{"IK-MISMATCH-4"}, Level: Must,
			Requirement: "draft §2.7: clients MUST correct the request before retrying, or the resource MUST fail the request and return one of the above errors.",
			Explanation: "Repeating the uncorrected mismatched request fails again the same way; the error is never turned into a stored success."},
			PerOperation: true, Run: mismatchRepeatFailsAgain},
	)
}

// probe is one materially different body.
type probe struct {
	name  string
	patch json.RawMessage
	// generated: idemcheck made the change up. A server may leave members
	// it does not know out of its fingerprint (draft §2.4 allows partial
	// fingerprints), so a replay is then a SHOULD miss, not a failure;
	// configured mutations are declared material by the user.
	generated bool
}

// addedFieldProbe is the mutation idemcheck generates itself: a member no
// configured body has.
func addedFieldProbe() probe {
	return probe{name: "idemcheck added member", patch: json.RawMessage(`{"idemcheck_probe":"added-member"}`), generated: true}
}

// firstProbe is the mutation used where one changed body suffices: the
// first configured or the derived one, else an added member.
func (e *Env) firstProbe() probe {
	if ms := mutationsOf(e.Op); len(ms) > 0 {
		return probe{name: ms[0].Name, patch: ms[0].Patch}
	}
	return addedFieldProbe()
}

// mismatchOutcome is one probe's verdict.
type mismatchOutcome struct {
	status   Status
	observed string
}

// runProbe stores the original under a fresh key, sends the mutated body
// under the same key and judges the answer. A failing answer to a request
// sent past TTL − margin proves nothing: the key may legally have expired.
func (e *Env) runProbe(ctx context.Context, pr probe) mismatchOutcome {
	k := e.NewKey()
	first := e.Send(ctx, Req{Label: "original", Key: k})
	if !first.OK() {
		return mismatchOutcome{Inconclusive, pr.name + ": the normal call did not succeed: " + first.String()}
	}
	r := e.Send(ctx, Req{Label: "same key, " + pr.name, Key: k, Body: e.Body(pr.patch)})
	o := e.judgeProbe(ctx, pr, k, first, r)
	if (o.status == Fail || o.status == Warn) && !e.WithinTTL(first, r) {
		return mismatchOutcome{Inconclusive, fmt.Sprintf("%s: sent %s after the original started, past TTL %s − margin (a stall), so the key may legally have expired (would have been %s: %s)",
			pr.name, r.SentAt().Sub(first.Start).Round(time.Millisecond), e.Target.TTL, o.status, o.observed)}
	}
	return o
}

// judgeProbe judges the answer r to the mutated body under k.
func (e *Env) judgeProbe(ctx context.Context, pr probe, k string, first, r Resp) mismatchOutcome {
	mutated := e.Body(pr.patch)
	if e.HasOracle() {
		n, err := e.Executions(ctx, k)
		if err != nil {
			return mismatchOutcome{Inconclusive, pr.name + ": " + err.Error()}
		}
		if n != 1 {
			return mismatchOutcome{Fail, fmt.Sprintf("%s: %d executions under one key (oracle), answer %s", pr.name, n, r.String())}
		}
	}
	if !e.sees().ErrorAnswers {
		e.blindTo(r) // an error answer may hide an execution
	}
	replayed, err := e.Replayed(ctx, first, r, k)
	if err != nil {
		return mismatchOutcome{Inconclusive, pr.name + ": " + err.Error()}
	}
	switch {
	case r.StaleConn():
		return mismatchOutcome{Inconclusive, pr.name + ": " + r.Err.Error()}
	case replayed && e.Profile.StaleReplayOnMismatch == Yes:
		return mismatchOutcome{Pass, pr.name + ": replayed the old response, as the profile allows (stale_replay_on_mismatch): " + r.String()}
	case replayed && e.Profile.StaleReplayOnMismatch == Unknown:
		return mismatchOutcome{Skip, pr.name + ": replayed the old response (profile stale_replay_on_mismatch is \"?\"; finding recorded): " + r.String()}
	case replayed && pr.generated:
		return mismatchOutcome{Warn, pr.name + ": replayed the old response (the member may be outside the fingerprint): " + r.String()}
	case replayed:
		return mismatchOutcome{Fail, pr.name + ": replayed the old response for a different payload: " + r.String() +
			" (to fix: store a fingerprint of the request body with the key, and answer a reuse whose body differs with an error, " + strings.Trim(fmt.Sprint(e.Profile.MismatchStatus), "[]") + ")"}
	case r.OK():
		return mismatchOutcome{Fail, pr.name + ": executed the different payload under a used key: " + r.String()}
	case hasStatus(e.Profile.MismatchStatus, r.Status):
		return mismatchOutcome{Pass, fmt.Sprintf("%s: %d", pr.name, r.Status)}
	case r.Is4xx():
		// Trap C8: the 4xx may be validation of the mutated body itself;
		// sent with a fresh key it must then fail too.
		fresh := e.Send(ctx, Req{Label: pr.name + ", fresh key (is the body valid?)", Key: e.NewKey(), Body: mutated})
		if !fresh.OK() {
			return mismatchOutcome{Inconclusive, fmt.Sprintf("%s: %d, but the mutated body fails with a fresh key too (%s): not an idempotency error", pr.name, r.Status, fresh.String())}
		}
		return mismatchOutcome{Warn, fmt.Sprintf("%s: %d, profile prefers %v", pr.name, r.Status, e.Profile.MismatchStatus)}
	}
	return mismatchOutcome{Warn, pr.name + ": " + r.String()}
}

// judgeProbes folds probe outcomes: any Fail fails, then any Warn is an
// unmet SHOULD, then a finding (Skip: a stale replay the profile leaves
// open) is recorded, and the case passes only if at least one probe passed.
func (e *Env) judgeProbes(ctx context.Context, probes []probe) Verdict {
	outs := make([]mismatchOutcome, len(probes))
	for i, pr := range probes {
		outs[i] = e.runProbe(ctx, pr)
	}
	var obs []string
	worst := Inconclusive
	rank := map[Status]int{Inconclusive: 0, Pass: 1, Skip: 2, Warn: 3, Fail: 4}
	for _, o := range outs {
		obs = append(obs, o.observed)
		if rank[o.status] > rank[worst] {
			worst = o.status
		}
	}
	observed := strings.Join(obs, "; ")
	expected := fmt.Sprintf("%v for each changed body, no execution, no replay of the old response", e.Profile.MismatchStatus)
	switch worst {
	case Fail:
		return e.Fail(expected, observed)
	case Warn:
		return e.Unmet(expected, observed)
	case Skip:
		return e.Finding("stale_replay_on_mismatch", observed)
	case Pass:
		return e.Pass(observed)
	}
	return e.Inconclusive(observed)
}

func skipNoMutations(_ *Target, _ *Profile, op *Operation) string {
	if len(mutationsOf(op)) == 0 {
		return "the operation has no mutations configured and its body no number or boolean to derive one from"
	}
	return ""
}

func mismatchChangedBody(ctx context.Context, e *Env) Verdict {
	var probes []probe
	for _, m := range mutationsOf(e.Op) {
		probes = append(probes, probe{name: m.Name, patch: m.Patch})
	}
	return e.judgeProbes(ctx, probes)
}

func mismatchAddedField(ctx context.Context, e *Env) Verdict {
	return e.judgeProbes(ctx, []probe{addedFieldProbe()})
}

// mismatchError stores the original under k and returns the answer to the
// first probe under k, or a verdict when no mismatch error was obtained.
func (e *Env) mismatchError(ctx context.Context, k string) (first, mismatch Resp, pr probe, v *Verdict) {
	first, v = e.original(ctx, k, nil)
	if v != nil {
		return first, Resp{}, pr, v
	}
	pr = e.firstProbe()
	mismatch = e.Send(ctx, Req{Label: "same key, " + pr.name, Key: k, Body: e.Body(pr.patch)})
	return first, mismatch, pr, nil
}

func skipNoProblemJSON(_ *Target, p *Profile, _ *Operation) string {
	if p.ProblemJSON == No {
		return "profile problem_json is false"
	}
	return ""
}

func mismatchProblemLink(ctx context.Context, e *Env) Verdict {
	_, r, pr, v := e.mismatchError(ctx, e.NewKey())
	if v != nil {
		return *v
	}
	if !r.Is4xx() {
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
	if mis.OK() || mis.Err != nil {
		return e.Inconclusive(pr.name + " did not fail in the first place (see mismatch/changed-body): " + mis.String())
	}
	again := e.Send(ctx, Req{Label: "same key, " + pr.name + " again", Key: k, Body: e.Body(pr.patch)})
	observed := fmt.Sprintf("%d then %s", mis.Status, again.String())
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

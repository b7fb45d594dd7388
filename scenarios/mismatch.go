package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/target"
	"github.com/idemcheck/idemcheck/wire"
)

// firstProbe is the mutation used where one changed body suffices: the
// first configured or the derived one, else an added member.
func (e *Env) firstProbe() probe {
	if ms := e.Op.MutationsOrDerived(); len(ms) > 0 {
		return probe{name: ms[0].Name, patch: ms[0].Patch}
	}
	return addedFieldProbe()
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
	req := Req{Label: "same key, " + pr.name, Key: k, Body: e.Body(pr.patch)}
	if pr.firstSentShift != 0 {
		req.FirstSent = e.Target.FirstSent(k).Add(pr.firstSentShift)
	}
	r := e.Send(ctx, req)
	o := e.judgeProbe(ctx, pr, k, first, r)
	if (o.status == Fail || o.status == Warn) && !e.WithinTTL(first, r) {
		return mismatchOutcome{Inconclusive, fmt.Sprintf("%s: sent %s after the original started, past TTL %s − margin (a stall), so the key may legally have expired (would have been %s: %s)",
			pr.name, r.SentAt().Sub(first.Start).Round(time.Millisecond), e.Target.TTL, o.status, o.observed)}
	}
	return o
}

// judgeProbe judges the answer r to the mutated body under k.
func (e *Env) judgeProbe(ctx context.Context, pr probe, k string, first, r wire.Resp) mismatchOutcome {
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
	case r.NotReached():
		return mismatchOutcome{Inconclusive, pr.name + ": " + r.Err.Error()}
	case replayed && e.Profile.StaleReplayOnMismatch == target.Yes:
		return mismatchOutcome{Pass, pr.name + ": replayed the old response, as the profile allows (stale_replay_on_mismatch): " + r.String()}
	case replayed && e.Profile.StaleReplayOnMismatch == target.Unknown:
		return mismatchOutcome{Skip, pr.name + ": replayed the old response (profile stale_replay_on_mismatch is \"?\"; finding recorded): " + r.String()}
	case replayed && pr.generated:
		return mismatchOutcome{Warn, pr.name + ": replayed the old response (the member may be outside the fingerprint): " + r.String()}
	case replayed:
		return mismatchOutcome{Fail, pr.name + ": replayed the old response for a different payload: " + r.String() +
			" (to fix: store a fingerprint of the request body with the key, and answer a reuse whose body differs with an error, " + strings.Trim(fmt.Sprint(e.Profile.MismatchStatus), "[]") + ")"}
	case r.OK():
		return mismatchOutcome{Fail, pr.name + ": executed the different payload under a used key: " + r.String()}
	case target.HasStatus(e.Profile.MismatchStatus, r.Status):
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

// mismatchError stores the original under k and returns the answer to the
// first probe under k, or a verdict when no mismatch error was obtained.
func (e *Env) mismatchError(ctx context.Context, k string) (first, mismatch wire.Resp, pr probe, v *Verdict) {
	first, v = e.original(ctx, k, nil)
	if v != nil {
		return first, wire.Resp{}, pr, v
	}
	pr = e.firstProbe()
	mismatch = e.Send(ctx, Req{Label: "same key, " + pr.name, Key: k, Body: e.Body(pr.patch)})
	return first, mismatch, pr, nil
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
	// firstSentShift, when set, moves an AEP-155 key's first_sent from the
	// original's (firstSentProbe).
	firstSentShift time.Duration
}

// addedFieldProbe is the mutation idemcheck generates itself: a member no
// configured body has.
func addedFieldProbe() probe {
	return probe{name: "idemcheck added member", patch: json.RawMessage(`{"idemcheck_probe":"added-member"}`), generated: true}
}

// mismatchOutcome is one probe's verdict.
type mismatchOutcome struct {
	status   Status
	observed string
}

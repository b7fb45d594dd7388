package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/wire"
)

// firstProbe is the mutation used where one changed request suffices and
// must be refused: the first configured or derived one that the profile
// does not let execute afresh (another query may be another resource),
// else an added member.
func (e *Env) firstProbe() probe {
	for _, m := range e.Op.MutationsOrDerived() {
		if pr := probeOf(m); !e.freshLegal(pr) {
			return pr
		}
	}
	return addedFieldProbe()
}

// freshLegal reports that a fresh execution answers pr legally: pr sends
// another query and the profile's query_mismatch is fresh or either.
func (e *Env) freshLegal(pr probe) bool {
	return pr.query != nil && e.Profile != nil && e.Profile.QueryMismatch != apispec.QueryReject
}

// rejectLegal reports that the mismatch status answers pr legally: every
// probe but another query where the profile's query_mismatch is fresh.
func (e *Env) rejectLegal(pr probe) bool {
	return pr.query == nil || e.Profile == nil || e.Profile.QueryMismatch != apispec.QueryFresh
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
	req := pr.req("same key, "+pr.name, k, e.Body(pr.patch))
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

// judgeProbe judges the answer r to the mutated request under k.
func (e *Env) judgeProbe(ctx context.Context, pr probe, k string, first, r wire.Resp) mismatchOutcome {
	mutated := e.Body(pr.patch)
	if e.HasOracle() {
		n, err := e.Executions(ctx, k)
		if err != nil {
			return mismatchOutcome{Inconclusive, pr.name + ": " + err.Error()}
		}
		if x := e.extraEventOnly(n, first, r); x != nil {
			return mismatchOutcome{Inconclusive, pr.name + ": " + x.Reason}
		}
		// Another resource's execution is counted under the same key.
		if fresh := n == 2 && r.OK() && e.freshLegal(pr); n != 1 && !fresh {
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
	case replayed && e.Profile.StaleReplayOnMismatch == apispec.Yes:
		return mismatchOutcome{Pass, pr.name + ": replayed the old response, as the profile allows (stale_replay_on_mismatch): " + r.String()}
	case replayed && e.Profile.StaleReplayOnMismatch == apispec.Unknown:
		return mismatchOutcome{Skip, pr.name + ": replayed the old response (profile stale_replay_on_mismatch is \"?\"; finding recorded): " + r.String()}
	case replayed && pr.generated:
		return mismatchOutcome{Warn, pr.name + ": replayed the old response (the member may be outside the fingerprint): " + r.String()}
	case replayed:
		differs, part := "a different payload", "request body"
		if w := pr.what(); w != "body" {
			differs, part = "a request with another "+w, "request's "+w
		}
		return mismatchOutcome{Fail, fmt.Sprintf("%s: replayed the old response for %s: %s (to fix: store a fingerprint of the %s with the key, and answer a reuse whose %s differs with an error, %s%s)",
			pr.name, differs, r.String(), part, pr.what(), strings.Trim(fmt.Sprint(e.Profile.MismatchStatus), "[]"), pr.orFresh(e))}
	case r.OK() && e.freshLegal(pr):
		return mismatchOutcome{Pass, fmt.Sprintf("%s: executed afresh, another query taken for another resource (query_mismatch: %s): %s", pr.name, e.Profile.QueryMismatch, r.String())}
	case r.OK():
		return mismatchOutcome{Fail, fmt.Sprintf("%s: executed the request with another %s under a used key: %s", pr.name, pr.what(), r.String())}
	case r.StatusIn(e.Profile.MismatchStatus) && !e.rejectLegal(pr):
		return mismatchOutcome{Warn, fmt.Sprintf("%s: %s, but the profile takes another query for another resource (query_mismatch: fresh)", pr.name, r.StatusText())}
	case r.StatusIn(e.Profile.MismatchStatus):
		return mismatchOutcome{Pass, fmt.Sprintf("%s: %s", pr.name, r.StatusText())}
	case r.Is4xx():
		// Trap C8: the 4xx may be validation of the mutated request
		// itself; sent with a fresh key it must then fail too.
		fresh := e.Send(ctx, pr.req(pr.name+", fresh key (is the request valid?)", e.NewKey(), mutated))
		if !fresh.OK() {
			return mismatchOutcome{Inconclusive, fmt.Sprintf("%s: %s, but the mutated request fails with a fresh key too (%s): not an idempotency error", pr.name, r.StatusText(), fresh.String())}
		}
		if len(e.Profile.MismatchStatus) == 0 && e.rejectLegal(pr) {
			// The profile's document names no status (AIP-155, AEP-155):
			// any refusal that executed nothing meets it.
			return mismatchOutcome{Pass, fmt.Sprintf("%s: %s (the profile names no mismatch status: any error)", pr.name, r.StatusText())}
		}
		return mismatchOutcome{Warn, fmt.Sprintf("%s: %s, profile prefers %v", pr.name, r.StatusText(), e.Profile.MismatchStatus)}
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
	want := fmt.Sprint(e.Profile.MismatchStatus)
	if len(e.Profile.MismatchStatus) == 0 {
		want = "an error" // the profile names no status
	}
	expected := want + " for each changed request, no execution, no replay of the old response"
	if slices.ContainsFunc(probes, e.freshLegal) {
		expected += fmt.Sprintf("; for another query a fresh execution instead (query_mismatch: %s)", e.Profile.QueryMismatch)
	}
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
	mismatch = e.Send(ctx, pr.req("same key, "+pr.name, k, e.Body(pr.patch)))
	return first, mismatch, pr, nil
}

// probe is one materially different request.
type probe struct {
	name  string
	patch json.RawMessage
	// query and headers are set on the request (nil: unchanged).
	query, headers map[string]string
	// generated: idemcheck made the change up. A server may leave members
	// it does not know out of its fingerprint (draft §2.4 allows partial
	// fingerprints), so a replay is then a SHOULD miss, not a failure;
	// configured mutations are declared material by the user.
	generated bool
	// firstSentShift, when set, moves an AEP-155 key's first_sent from the
	// original's (firstSentProbe).
	firstSentShift time.Duration
}

// probeOf is the probe of a configured or derived mutation.
func probeOf(m apispec.Mutation) probe {
	return probe{name: m.Name, patch: m.Patch, query: m.Query, headers: m.Headers}
}

// req is pr's request under key with body (the operation's, patched).
func (pr probe) req(label, key string, body json.RawMessage) Req {
	return Req{Label: label, Key: key, Body: body, Query: pr.query, Headers: pr.headers}
}

// on is body with pr's patch applied (body itself when pr patches none).
func (pr probe) on(body json.RawMessage) (json.RawMessage, error) {
	if len(pr.patch) == 0 {
		return body, nil
	}
	return jsonx.MergePatch(body, pr.patch)
}

// what says what pr changes ("body", "query", "body+headers").
func (pr probe) what() string {
	return apispec.Mutation{Patch: pr.patch, Query: pr.query, Headers: pr.headers}.What()
}

// orFresh is the alternative to an error the profile allows pr, for a
// fix's wording.
func (pr probe) orFresh(e *Env) string {
	if e.freshLegal(pr) {
		return ", or execute it as another resource"
	}
	return ""
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

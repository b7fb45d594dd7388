package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// Proof says which answers prove a case's expected outcome (Case.Proof),
// so that an answer the profile names as its mismatch or in-flight signal
// never proves something else: a key-syntax rejection, a case-folding
// probe, a fresh execution. Those signals are about the record of a key
// already seen; a server answering everything with one of them is not
// rejecting the probed key, nor executing afresh. A case may admit
// several proofs (an endpoint-scope probe passes on an independent
// execution or an idempotency error).
type Proof uint8

const (
	// ByRefusal: a refusal (a 4xx) that is not the profile's mismatch or
	// in-flight answer, or, where the refusal's status is one of theirs
	// (Stripe answers 400 to both an invalid key and a changed payload),
	// one that a normal request under a fresh key does not get.
	ByRefusal Proof = 1 << iota
	// ByFresh: an execution of its own, a 2xx the evidence counts.
	ByFresh
	// ByMismatch: the profile's mismatch answer (any refusal where the
	// profile names none).
	ByMismatch
	// ByInFlight: the profile's in-flight answer, or a wait for the
	// replay where the profile allows one (block_ok).
	ByInFlight
)

// String names the answers p admits as proof, as docs and verdicts say
// them.
func (p Proof) String() string {
	var out []string
	for _, n := range []struct {
		p    Proof
		name string
	}{{ByRefusal, "a refusal that is not the mismatch or in-flight answer"}, {ByFresh, "a fresh execution"}, {ByMismatch, "the mismatch answer"}, {ByInFlight, "the in-flight answer"}} {
		if p&n.p != 0 {
			out = append(out, n.name)
		}
	}
	if len(out) == 0 {
		return "no refusal and no fresh execution (counts, replays)"
	}
	return strings.Join(out, " or ")
}

// signalOf says which of the profile's idempotency signals r is (a
// status may be both: seeds answers 409 to either): its mismatch_status
// or in_flight_status (a gRPC code exactly), or, on a carrier reading
// its answers from a document (GraphQL, JSON-RPC, MCP), the status the
// answers' mismatch and in_flight codes stand for.
func (e *Env) signalOf(r wire.Resp) (mismatch, inFlight bool) {
	if r.Err != nil || e.Profile == nil || r.OK() {
		return false, false
	}
	m, f := e.Target.AnswerSignals()
	mismatch = r.StatusIn(e.Profile.MismatchStatus) || (m != 0 && r.Status == m)
	inFlight = r.StatusIn(e.Profile.InFlightStatus) || (f != 0 && r.Status == f)
	return mismatch, inFlight
}

// signal names the signal r is, "" for none.
func (e *Env) signal(r wire.Resp) string {
	switch m, f := e.signalOf(r); {
	case m && f:
		return "mismatch or in-flight"
	case m:
		return "mismatch"
	case f:
		return "in-flight"
	}
	return ""
}

// unproven reports that r is a signal the case's Proof does not take.
func (e *Env) unproven(r wire.Resp) bool {
	m, f := e.signalOf(r)
	return (m || f) && !(m && e.Case.Proof&ByMismatch != 0) && !(f && e.Case.Proof&ByInFlight != 0)
}

// noClaimRaced reports that a same-key burst rs, which executed n times
// after its key's record, raced no claim: it executed nothing and every
// answer was the profile's mismatch or in-flight signal, where the
// profile says an expired key executes afresh. Under expiry unknown a
// plain refusal (400, INVALID_ARGUMENT, the missing status: AEP-155
// refuses an expired key) or a 409 (expired-409's "result expired") may
// be the expired key's legal answer, so only another signal counts;
// under expired-409 none does.
func (e *Env) noClaimRaced(n int, rs []wire.Resp) bool {
	if n != 0 || len(rs) == 0 {
		return false
	}
	legal := false // an answer that may be an expired key's own
	for _, r := range rs {
		if e.signal(r) == "" {
			return false
		}
		_, inFlight := e.signalOf(r)
		legal = legal || inFlight || r.Status == http.StatusBadRequest || r.Status == http.StatusConflict || r.StatusIn(e.Profile.MissingStatus)
	}
	switch e.Profile.Expiry {
	case apispec.ExpiryFresh:
		return true
	case apispec.ExpiryUnknown:
		return !legal
	}
	return false
}

// noteAnswer keeps what the proof rule needs of resp, the answer to r: a
// keyed answer, and the signal it is.
func (e *Env) noteAnswer(r Req, resp wire.Resp) {
	if r.NoKey || resp.NotReached() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.keyed++
	if e.unproven(resp) {
		e.signals = append(e.signals, e.signal(resp)+" "+resp.StatusText())
	}
}

// provenVerdict holds a pass of a case proven by a refusal or a fresh
// execution to its evidence: when every keyed answer the case got was a
// signal its proof does not take (the mismatch or in-flight answer), the
// pass stands only if a normal request under a fresh key, sent now,
// succeeds; else the case is inconclusive. A server answering every
// keyed request with the signal then passes nothing: its answers were
// about no key the case probed. The case's own judging handles mixed
// answers (scope/case-sensitive, syntax/max-length).
func (e *Env) provenVerdict(ctx context.Context, v Verdict) Verdict {
	if v.Status != Pass || e.Case.Proof&(ByRefusal|ByFresh) == 0 {
		return v
	}
	e.mu.Lock()
	keyed, signals := e.keyed, append([]string(nil), e.signals...)
	e.mu.Unlock()
	if keyed == 0 || len(signals) < keyed {
		return v
	}
	control := e.Send(ctx, Req{Label: "control: the normal request under a fresh key (are the signal answers about the probed keys?)", Key: e.NewKey()})
	if control.OK() {
		v.Observed += fmt.Sprintf("; a normal request under a fresh key succeeded (%s): the profile's %s answers were about the keys probed", control.StatusText(), signals[0])
		return v
	}
	return e.Inconclusive(fmt.Sprintf("every keyed answer was a profile signal this case does not take as proof (%s), and a normal request under a fresh key got %s too: such an answer is about a key's record, not the key probed, so it proves neither a rejection nor a fresh execution (the case would have passed: %s)",
		strings.Join(compactStrings(signals), ", "), statusOf(control), v.Observed))
}

// compactStrings is ss without repeats, in first-seen order.
func compactStrings(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

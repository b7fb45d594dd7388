package scenarios

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// SCOPE: what a key is unique within. Another principal's key is always a
// different key (draft §5 composite lookup key; trap C15); another endpoint
// or method depends on the profile.
func init() {
	register(
		Case{Meta: Meta{ID: "scope/other-user-isolated", Family: "scope", Requirements: []string{"IK-SCOPE-1"}, Level: Must,
			Requirement: "draft §5: a composite lookup key (the client key plus client attributes) avoids data leaks; every profile isolates principals (trap C15).",
			Explanation: "A second principal sending a key the first one completed executes on its own and never receives the first principal's response.",
			Needs:       []Need{NeedSecondPrincipal, NeedEffects}},
			Proof:        ByFresh,
			PerOperation: true, Run: scopeOtherUserIsolated},
		Case{Meta: Meta{ID: "scope/other-user-in-flight", Family: "scope", Requirements: []string{"IK-SCOPE-1"}, Level: Must,
			Requirement: "draft §5 composite lookup key; trap C15: the same key from another principal never answers 409 on the first principal's in-flight request.",
			Explanation: "While the first principal's request is in flight, the second principal's request with the same key executes instead of meeting a conflict.",
			Needs:       []Need{NeedSecondPrincipal, NeedSlow, NeedEffects}},
			Proof:        ByFresh,
			PerOperation: true, Run: scopeOtherUserInFlight},
		Case{Meta: Meta{ID: "scope/other-endpoint", Family: "scope", Requirements: []string{"IK-SCOPE-2"}, Level: Should,
			Requirement: "Profile scope_endpoint: the same key on another endpoint is independent (seeds, ePay) or an idempotency error (Stripe); the IETF draft is silent. Returning the other endpoint's stored response is never acceptable.",
			Explanation: "A key used on one operation, sent to another operation, executes independently or gets an error per profile, and never replays the first operation's response.",
			Needs:       []Need{NeedSecondOperation, NeedEffects}},
			Proof:        ByFresh | ByRefusal | ByMismatch,
			PerOperation: true, Peer: endpointPeer, Skips: skipNoEndpointPeer, Run: scopeOtherEndpoint},
		Case{Meta: Meta{ID: "scope/other-method", Family: "scope", Requirements: []string{"IK-SCOPE-3"}, Level: Info,
			Requirement: "ePay-style scope (key + endpoint + verb): the same key on the same path with another method is recorded; a replay of the other method's response is never acceptable.",
			Explanation: "A key used with one method, sent with another method to the same path, is recorded as independent or rejected, never answered with the other method's response.",
			Needs:       []Need{NeedSecondOperation}},
			Proof:        ByFresh | ByRefusal | ByMismatch,
			PerOperation: true, UsesOracle: true, Peer: methodPeer, Skips: skipNoMethodPeer, Unfit: unlessMethods, Run: scopeOtherMethod},
		Case{Meta: Meta{ID: "scope/case-sensitive", Family: "scope", Requirements: []string{"IK-SCOPE-4"}, Level: Should,
			Requirement: "draft §2.2: the key is an opaque sf-string, so keys that differ only in letter case are different keys, unless the profile's key_case says the API folds them (UUID-only formats may; OASIS note on UUID case).",
			Explanation: "The lower-case spelling of a completed upper-case key, in the same request byte for byte but the key, executes as a distinct key (or is rejected as a key), never gets the upper-case key's response nor the profile's mismatch or in-flight answer, which are about the upper-case key's record (profile key_case sensitive); folded accepts the replay, \"?\" records it.",
			Needs:       []Need{NeedEffects}},
			Proof:        ByRefusal | ByFresh,
			PerOperation: true, Run: scopeCaseSensitive},
	)
}

func scopeOtherUserIsolated(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	a, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	b := e.Send(ctx, Req{Label: "second principal, same key", Key: k, Principal: 1})
	return e.judgeOtherUser(ctx, k, a, b, e.Body())
}

func scopeOtherUserInFlight(ctx context.Context, e *Env) Verdict {
	body, _, _ := e.Variant(apispec.VariantSlow)
	k, a, b, _ := e.duringSlow(ctx, false, func(k string) wire.Resp {
		return e.Send(ctx, Req{Label: "second principal, same key, while the first is in flight", Key: k, Principal: 1, Body: body})
	})
	if !a.OK() {
		return e.Inconclusive("the slow variant did not succeed: " + a.String())
	}
	if !overlapped(a, b) {
		return e.Missed("could not overlap: the second principal's request was sent after the first completed")
	}
	if b.StatusIn(e.Profile.InFlightStatus) {
		return e.Fail("the second principal's own execution", fmt.Sprintf("a conflict with the first principal's in-flight request: %s", b.String()))
	}
	return e.judgeOtherUser(ctx, k, a, b, body)
}

// endpointPeer is the operation scope/other-endpoint sends op's key to:
// the next configured one, nil when it is on op's endpoint.
func endpointPeer(t *apispec.Target, op *apispec.Operation) *apispec.Operation {
	ops := t.Operations
	for i := range ops {
		if ops[i].Name == op.Name {
			o := &ops[(i+1)%len(ops)]
			if o.Method == op.Method && o.Path == op.Path {
				return nil
			}
			return o
		}
	}
	return nil
}

// methodPeer is the operation on op's path with another method
// (scope/other-method), nil when none.
func methodPeer(t *apispec.Target, op *apispec.Operation) *apispec.Operation {
	for i := range t.Operations {
		if o := &t.Operations[i]; o.Path == op.Path && o.Method != op.Method {
			return o
		}
	}
	return nil
}

func skipNoEndpointPeer(t *apispec.Target, _ *apispec.Profile, op *apispec.Operation) string {
	if endpointPeer(t, op) == nil {
		return "needs a second operation on another endpoint"
	}
	return ""
}

func skipNoMethodPeer(t *apispec.Target, _ *apispec.Profile, op *apispec.Operation) string {
	if methodPeer(t, op) == nil {
		return "needs a second operation on the same path with another method"
	}
	return ""
}

func scopeOtherEndpoint(ctx context.Context, e *Env) Verdict {
	other := endpointPeer(e.Target, e.Op)
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	r := e.Send(ctx, Req{Label: "same key on " + other.Name, Key: k, Op: other})
	observed := fmt.Sprintf("%s %s then %s %s: %s", e.Op.Method, e.Op.Path, other.Method, other.Path, r.String())
	l, why, err := e.leaked(ctx, e.Op, other, first, r, k, 1)
	switch {
	case err != nil:
		return e.Inconclusive(err.Error() + ": " + observed)
	case l == leakStored:
		return e.Fail("an independent execution or an idempotency error, never the other endpoint's response", "replayed "+e.Op.Name+"'s response: "+observed)
	case l == leakUnsure:
		return e.Inconclusive(why + ": cannot tell an execution from a replay: " + observed)
	case l == leakUnknown:
		return e.Unverifiable(why + ": cannot tell an execution from a replay: " + observed)
	}
	if v := e.lostConn(r); v != nil {
		return *v
	}
	switch {
	case r.Is5xx() || r.Err != nil:
		return e.Unmet("an independent execution or an idempotency error, never a 5xx", observed)
	}
	mode := "independent"
	if !r.OK() {
		if fresh, ok := e.usable(ctx, other, 0, other.Body); !ok {
			return e.Inconclusive(other.Name + " fails with a fresh key too: " + fresh.String())
		}
		mode = "error"
	}
	switch e.Profile.ScopeEndpoint {
	case apispec.ScopeUnknown:
		return e.Finding("scope_endpoint", mode+": "+observed)
	case apispec.ScopeIndependent:
		if mode != "independent" {
			return e.Unmet("an independent execution (profile scope_endpoint independent)", observed)
		}
	case apispec.ScopeError:
		if mode != "error" {
			return e.inTTL(e.Unmet("an idempotency error (profile scope_endpoint error)", observed), first, r)
		}
	}
	return e.Pass(mode + ": " + observed)
}

func scopeOtherMethod(ctx context.Context, e *Env) Verdict {
	other := methodPeer(e.Target, e.Op)
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	r := e.Send(ctx, Req{Label: "same key, " + other.Method, Key: k, Op: other})
	observed := fmt.Sprintf("%s then %s on %s: %s", e.Op.Method, other.Method, e.Op.Path, r.String())
	l, why, err := e.leaked(ctx, e.Op, other, first, r, k, 1)
	switch {
	case err != nil:
		return e.Inconclusive(err.Error() + ": " + observed)
	case l == leakStored:
		return e.Fail("an independent answer or an idempotency error, never the other method's response", "replayed the "+e.Op.Method+" response: "+observed)
	case l == leakUnsure:
		return e.Inconclusive(why + ": cannot tell an execution from a replay: " + observed)
	case l == leakUnknown:
		return e.Unverifiable(why + ": cannot tell an execution from a replay: " + observed)
	}
	if v := e.lostConn(r); v != nil {
		return *v
	}
	switch {
	case r.Is5xx() || r.Err != nil:
		return e.Unmet("an independent answer or an idempotency error, never a 5xx", observed)
	case r.OK():
		return e.Pass("independent: " + observed)
	}
	return e.Pass("rejected: " + observed)
}

func scopeCaseSensitive(ctx context.Context, e *Env) Verdict {
	// A key without letters (an all-digit UUID, a hash key) has no other
	// case: it would be sent twice as one key and read as a shared one.
	k := e.NewKey()
	for range 20 {
		if strings.ToUpper(k) != strings.ToLower(k) {
			break
		}
		k = e.NewKey()
	}
	upper := strings.ToUpper(k)
	lower := strings.ToLower(upper)
	if upper == lower {
		return e.Inconclusive("the key generator made 20 keys without a letter: no two keys differing only in case")
	}
	if !e.Profile.KeyValid(upper) || !e.Profile.KeyValid(lower) {
		return e.Skip(fmt.Sprintf("profile key_format %q does not allow both %s and %s: no two keys differing only in case", e.Profile.KeyFormat, upper, lower))
	}
	first, bad := e.original(ctx, upper, nil)
	if bad != nil {
		return *bad
	}
	// The same request, key aside: with a marker, the double's token
	// stays the upper-case key's, so that a server folding the key case
	// meets the same body, not a changed one.
	r := e.Send(ctx, Req{Label: "same key in lower case", Key: lower, SameAs: upper})
	observed := fmt.Sprintf("%s then %s: %s", upper, lower, r.String())
	if v := e.lostConn(r); v != nil {
		return *v
	}
	// A case-insensitive server may file the lower-case key under either
	// spelling: one execution under both means r executed nothing.
	replayed, err := e.Replayed(ctx, first, r, upper, lower)
	if err != nil {
		return e.undecided(err, observed)
	}
	if r.Is5xx() || r.Err != nil {
		return e.Unmet("a distinct key, a replay or a rejection; never a 5xx", observed)
	}
	var shared string
	switch {
	case replayed:
		shared = fmt.Sprintf("two keys share one response: %s and %s both answered %s", upper, lower, first.String())
		if id := e.CreatedID(first); id != "" {
			shared = fmt.Sprintf("two keys share one response: %s and %s both answered created id %s", upper, lower, id)
		}
	case r.OK():
	case r.StatusIn(e.Profile.MissingStatus) && (r.StatusIn(e.Profile.MismatchStatus) || r.StatusIn(e.Profile.InFlightStatus)):
		// The profile's answer to an invalid key is also its answer to a
		// key that met another request's record: either may be meant.
		return e.Inconclusive(fmt.Sprintf("%s is the profile's answer both to an invalid key and to a key another request holds: cannot tell a rejection of %s from the case folded onto %s: %s", r.StatusText(), lower, upper, observed))
	case r.StatusIn(e.Profile.MismatchStatus) || r.StatusIn(e.Profile.InFlightStatus):
		// A mismatch or in-flight answer is about the record of a key
		// already seen: the only one is the upper-case key's.
		shared = fmt.Sprintf("%s met %s's record: %s is the profile's mismatch or in-flight answer", lower, upper, r.StatusText())
	default:
		return e.Pass("rejected: " + observed)
	}
	if shared != "" {
		switch e.Profile.KeyCase {
		case apispec.KeyCaseFolded:
			return e.Pass("folded, as the profile says (key_case folded): " + shared + "; " + observed)
		case apispec.KeyCaseSensitive:
			return e.inTTL(e.unmetAt(Should, "a distinct key (keys are opaque sf-strings; profile key_case sensitive)", shared+"; "+observed), first, r)
		}
		return e.Finding("key_case", "folded: "+shared+"; "+observed)
	}
	if e.HasOracle() {
		n, err := e.executionsUnder(ctx, upper, lower)
		if err != nil {
			return e.Inconclusive(err.Error())
		}
		observed += fmt.Sprintf("; %d executions under the two spellings (oracle)", n)
	}
	if e.Profile.KeyCase == apispec.KeyCaseFolded {
		return e.Unmet("the upper-case key's replay (profile key_case folded)", "a distinct key: "+observed)
	}
	return e.Pass("a distinct key: " + observed)
}

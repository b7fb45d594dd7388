package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
)

// hostileKeyLen is the size of the oversized key probes (10 KB).
const hostileKeyLen = 10 << 10

// SECURITY: draft §5 — validate keys against the published format before
// any lookup, treat them as opaque, and never let a key reach another
// principal's record or an unauthenticated client.
func init() {
	register(
		Case{Meta: Meta{ID: "security/invalid-format-rejected", Family: "security", Requirements: []string{"IK-SECURITY-1"}, Level: Should,
			Requirement: "draft §5: the resource should always validate the key as per its published specification before processing the request.",
			Explanation: "Keys outside the published format (10 KB over key_max_len, a control character in an sf-string, a non-ASCII key in an AIP/AEP message field) get a 4xx and execute nothing."},
			Proof:        ByRefusal,
			PerOperation: true, UsesOracle: true, Run: securityInvalidFormatRejected},
		Case{Meta: Meta{ID: "security/hostile-keys", Family: "security", Requirements: []string{"IK-SECURITY-2"}, Level: Should,
			Requirement: "draft §5 (keys are client input): injection and wildcard characters and a 10 KB key get a 4xx or opaque handling, never a 5xx; a wildcard key never matches a stored one.",
			Explanation: "SQL, LIKE, glob and escape characters in keys are harmless, and keys abc% or abc* never replay the stored abc123... key."},
			Proof:        ByRefusal | ByFresh,
			PerOperation: true, UsesOracle: true, Run: securityHostileKeys},
		Case{Meta: Meta{ID: "security/cross-principal-guess", Family: "security", Requirements: []string{"IK-SECURITY-3", "IK-SCOPE-1"}, Level: Must,
			Requirement: "draft §5 data leaks: guessing another client's key must yield nothing of theirs (the composite lookup key includes the principal).",
			Explanation: "A second principal who guesses a completed key and sends its own payload executes on its own, sees nothing of the first principal's, and leaves their record intact.",
			Needs:       []Need{NeedSecondPrincipal, NeedEffects}},
			Proof:        ByFresh,
			PerOperation: true, Run: securityCrossPrincipalGuess},
		Case{Meta: Meta{ID: "security/low-entropy-keys", Family: "security", Requirements: []string{"IK-SECURITY-4"}, Level: Should,
			Requirement: "draft §5: low-entropy keys let attackers determine other keys; profile key_min_len (rocket-rides: 20 characters, else 400).",
			Explanation: "A one-character key and a short repeated-character key are rejected where the profile publishes a minimum length; otherwise their handling is recorded."},
			Proof:        ByRefusal,
			PerOperation: true, Run: securityLowEntropyKeys},
		Case{Meta: Meta{ID: "security/unauthenticated-known-key", Family: "security", Requirements: []string{"IK-SECURITY-5"}, Level: Should,
			Requirement: "Stripe (authentication runs before the idempotency layer); Adyen security note: an unauthenticated request with a known key gets 401 and never the stored response.",
			Explanation: "Replaying a completed key without credentials is refused and reveals nothing of the stored response."},
			Proof:        ByRefusal,
			PerOperation: true, UsesOracle: true, Run: securityUnauthenticatedKnownKey},
		Case{Meta: Meta{ID: "security/conflict-no-leak", Family: "security", Requirements: []string{"IK-SECURITY-6"}, Level: Should,
			Requirement: "draft §5 (data leaks) and AdCP's conflict_no_payload_leak: an idempotency error reveals nothing of the stored request or response: none of its ids or distinctive values, no fingerprint, no field diff.",
			Explanation: "A changed payload under a used key is refused with a body that carries no id or per-execution value of the stored answer, no value of the stored request the new one lacks, and no SHA-256 of either (hex, its 16-character prefix, base64)."},
			Proof:        ByRefusal | ByMismatch | ByInFlight,
			PerOperation: true, Skips: skipsAll(skipNoMutations, skipStaleReplay), Run: securityConflictNoLeak},
	)
}

func securityInvalidFormatRejected(ctx context.Context, e *Env) Verdict {
	probes := map[string][]string{}
	if maxLen := e.Profile.KeyMaxLen; maxLen > 0 {
		probes[fmt.Sprintf("%d-character key (key_max_len %d)", max(hostileKeyLen, 2*maxLen), maxLen)] = []string{e.KeyValue(keyOfLen(max(hostileKeyLen, 2*maxLen)))}
	}
	if e.Target.KeySyntax == apispec.SFString {
		probes["control character in the sf-string"] = []string{`"` + e.uniquePrefix("tab") + "\tx\""}
	}
	if e.Profile.KeyFormat != "" {
		if k := "not-" + e.NewKey() + "!"; !e.Profile.KeyValid(k) {
			probes[fmt.Sprintf("key breaking key_format %q", e.Profile.KeyFormat)] = []string{e.KeyValue(k)}
		}
	}
	e.nonASCIIProbe(probes)
	if len(probes) == 0 {
		return e.Skip("the profile publishes no key format to break (key_max_len 0, no key_format, raw keys)")
	}
	var seen, accepted, broken []string
	for _, name := range sortedKeys(probes) {
		r := e.Send(ctx, Req{Label: name, KeyLines: probes[name]})
		line := fmt.Sprintf("%s: %s", name, statusOf(r))
		if e.HasOracle() {
			// the probe keys are fresh: any count is this request's
			n, err := e.linesCount(ctx, probes[name], strings.Trim(probes[name][0], `"`))
			if err != nil {
				return e.Inconclusive(err.Error() + ": " + join(append(seen, line)))
			}
			if n > 0 {
				line += fmt.Sprintf(", %d executions (oracle)", n)
				if !r.OK() {
					broken = append(broken, name) // rejected (or lost) after executing
				}
			}
		}
		if v := e.lostConn(r); v != nil && !slices.Contains(broken, name) {
			return *v
		}
		seen = append(seen, line)
		switch {
		case r.Is5xx() || r.Err != nil:
			broken = append(broken, name)
		case !r.Is4xx():
			accepted = append(accepted, name)
		}
	}
	observed := strings.Join(seen, "; ")
	switch {
	case len(broken) > 0:
		return e.Fail("a 4xx before any execution, never a 5xx", observed)
	case len(accepted) > 0:
		return e.Unmet("a 4xx for every key outside the published format", observed)
	}
	return e.Pass(observed)
}

func securityHostileKeys(ctx context.Context, e *Env) Verdict {
	p := e.uniquePrefix("h")
	hostile := []string{p + "' OR '1'='1", p + "%", p + "*", p + "?", p + `\`, p + "{}", p + strings.Repeat("k", hostileKeyLen)}
	var seen []string
	for _, k := range hostile {
		r := e.Send(ctx, Req{Label: "hostile key", Key: k})
		name := k
		if len(name) > 40 {
			name = fmt.Sprintf("%s... (%d chars)", name[:20], len(k))
		}
		seen = append(seen, fmt.Sprintf("%q: %s", name, statusOf(r)))
		if r.Is5xx() {
			return e.Fail("a 4xx or opaque handling, never a 5xx", strings.Join(seen, "; "))
		}
		if v := e.lostConn(r); v != nil {
			return *v
		}
		if r.Err != nil {
			return e.Unmet("a 4xx or opaque handling", strings.Join(seen, "; "))
		}
	}
	// Wildcard probe: a store that matches keys with LIKE or a glob would
	// find the stored key from its prefix. Under a declared key_format, or
	// a key_max_len it exceeds (AIP-155's 36), the stored key is a
	// generated one (the abc… form would be rejected).
	w := e.uniquePrefix("abc")
	stored := w + "123" + strings.ReplaceAll(e.NewKey(), "-", "")
	if !e.Profile.KeyValid(stored) || (e.Profile.KeyMaxLen > 0 && len(stored) > e.Profile.KeyMaxLen) {
		stored = e.NewKey()
		w = stored[:len(stored)/2]
	}
	first, bad := e.original(ctx, stored, nil)
	if bad != nil {
		return *bad
	}
	for _, probe := range []string{w + "%", w + "*", stored[:len(w)+3] + "%"} {
		r := e.Send(ctx, Req{Label: "wildcard key " + probe, Key: probe})
		seen = append(seen, fmt.Sprintf("%q after storing %q: %s", probe, stored, statusOf(r)))
		l, why, err := e.leaked(ctx, e.Op, e.Op, first, r, probe, 0)
		switch {
		case err != nil:
			return e.Inconclusive(err.Error() + ": " + strings.Join(seen, "; "))
		case l == leakStored:
			return e.Fail("a wildcard key never matches a stored key", "replayed the stored key's response: "+strings.Join(seen, "; "))
		case l == leakUnsure:
			return e.Inconclusive(why + ": cannot tell a wildcard match from an execution: " + strings.Join(seen, "; "))
		}
		if v := e.lostConn(r); v != nil {
			return *v
		}
		if r.Is5xx() {
			return e.Fail("a 4xx or opaque handling, never a 5xx", strings.Join(seen, "; "))
		}
	}
	return e.Pass(strings.Join(seen, "; "))
}

func securityCrossPrincipalGuess(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	a, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	pr := e.firstProbe()
	guess := e.Body(pr.patch)
	req := pr.req("second principal guesses the key (own request: "+pr.name+")", k, guess)
	req.Principal = 1
	b := e.Send(ctx, req)
	if v := e.judgeOtherUser(ctx, k, a, b, guess); v.Status != Pass {
		return v
	}
	// Both principals executed under k: without ids, the retry replays
	// when it adds no execution.
	before := 0
	if !hasMarks(e.Op) {
		n, err := e.Executions(ctx, k)
		if err != nil {
			return e.Inconclusive(err.Error())
		}
		before = n
	}
	again := e.Send(ctx, Req{Label: "first principal retries", Key: k})
	observed := fmt.Sprintf("second principal %s; first principal's retry %s", b.String(), again.String())
	if v := e.lostConn(again); v != nil {
		return *v
	}
	replayed := again.OK()
	if id := e.CreatedID(a); hasMarks(e.Op) {
		replayed = replayed && id != "" && id == e.CreatedID(again)
	} else if n, err := e.Executions(ctx, k); err != nil {
		return e.Inconclusive(err.Error() + ": " + observed)
	} else {
		replayed = replayed && n == before
	}
	if !replayed {
		return e.inTTL(e.Fail("the first principal's record intact (its retry replays)", observed), a, again)
	}
	return e.Pass(observed)
}

func securityLowEntropyKeys(ctx context.Context, e *Env) Verdict {
	minLen := e.Profile.KeyMinLen
	keys := []string{"a"}
	if minLen > 2 {
		keys = append(keys, strings.Repeat("a", minLen-1))
	}
	var seen []string
	accepted, offFormat := false, false
	for _, k := range keys {
		r := e.Send(ctx, Req{Label: fmt.Sprintf("%d-character key", len(k)), Key: k})
		seen = append(seen, fmt.Sprintf("%q: %s", k, statusOf(r)))
		if v := e.lostConn(r); v != nil {
			return *v
		}
		if r.Is5xx() || r.Err != nil {
			return e.Fail("a 4xx or opaque handling, never a 5xx", strings.Join(seen, "; "))
		}
		accepted = accepted || !r.Is4xx()
		offFormat = offFormat || (!r.Is4xx() && !e.Profile.KeyValid(k))
	}
	observed := strings.Join(seen, "; ")
	switch {
	case offFormat:
		return e.Unmet(fmt.Sprintf("a 4xx for keys that break key_format %q", e.Profile.KeyFormat), observed)
	case minLen <= 1 && e.Profile.KeyFormat != "":
		return e.Pass("keys outside key_format rejected: " + observed)
	case minLen <= 1:
		v := e.Finding("key_min_len", "rejected: "+observed)
		if accepted {
			v = e.Finding("key_min_len", "accepted: "+observed)
		}
		if minLen == 1 { // set, e.g. from a schema's minLength: 1
			v.Reason = "profile's key_min_len 1 asks only for a non-empty key, no floor against low entropy; finding recorded"
		}
		return v
	case accepted:
		return e.Unmet(fmt.Sprintf("a 4xx for keys under key_min_len %d", minLen), observed)
	}
	return e.Pass(observed)
}

func securityUnauthenticatedKnownKey(ctx context.Context, e *Env) Verdict {
	// First: does the operation answer without credentials at all? Then
	// anyone may use any key and a same-key replay is the API's ordinary
	// behaviour, not a leak (an API without authentication failed here).
	if probe := e.Send(ctx, Req{Label: "fresh key, no credentials (does the operation need any?)", Key: e.NewKey(), Principal: -1}); probe.OK() {
		return e.Skip("the operation answers without credentials: " + probe.String())
	}
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	anon := e.Send(ctx, Req{Label: "same key, no credentials", Key: k, Principal: -1})
	observed := fmt.Sprintf("%s without credentials", anon.String())
	l, why, err := e.leaked(ctx, e.Op, e.Op, first, anon, k, 1)
	switch {
	case err != nil:
		return e.Inconclusive(err.Error() + ": " + observed)
	case l == leakStored:
		return e.Fail("401 and nothing of the stored response", "the stored response without credentials: "+observed)
	case l == leakUnsure:
		return e.Inconclusive(why + ": answered without credentials with an equal body: " + observed)
	}
	if v := e.lostConn(anon); v != nil {
		return *v
	}
	switch {
	case anon.OK():
		return e.Skip("the operation answers without credentials: " + observed)
	case anon.Status == 401 || anon.Status == 403:
		return e.Pass(observed)
	}
	return e.Unmet("401 (or 403) before any idempotency work", observed)
}

func securityConflictNoLeak(ctx context.Context, e *Env) Verdict {
	pr := e.firstProbe()
	k := e.NewKey()
	stored := e.Body()
	first, bad := e.original(ctx, k, stored)
	if bad != nil {
		return *bad
	}
	control := e.Send(ctx, Req{Label: "another key's request (what every answer carries)", Key: e.NewKey()})
	sent := e.Body(pr.patch)
	r := e.Send(ctx, pr.req("same key, "+pr.name, k, sent))
	if v := e.lostConn(r, control); v != nil {
		return *v
	}
	if !r.Is4xx() {
		return e.Inconclusive(fmt.Sprintf("the changed request (%s) was not refused with a 4xx: no idempotency error to read (mismatch/changed-body judges the answer): %s", pr.name, r.String()))
	}
	leaked := newLeakProbe(first, control, stored, sent, e.Target.BaseURL+e.Op.Path, k).found(r.Body)
	observed := fmt.Sprintf("%s, %d bytes", r.StatusText(), len(r.Body))
	if len(leaked) > 0 {
		return e.inTTL(e.Unmet("an idempotency error that reveals nothing of the stored request or response", observed+" carrying "+strings.Join(leaked, ", ")), first, r)
	}
	return e.Pass(observed + ": none of the stored answer's ids or per-execution values, none of the stored request's other values, no SHA-256 of either")
}

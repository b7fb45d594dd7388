package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// SYNTAX: how the key is written (draft §2.1: an RFC 9651 sf-string) and
// validated (draft §5: "always validate the key").
func init() {
	register(
		Case{Meta: Meta{ID: "syntax/key-accepted", Family: "syntax", Requirements: []string{"IK-SYNTAX-1"}, Level: Must,
			Requirement: "draft §2.1: the Idempotency-Key field value MUST be an sf-string (RFC 9651 §3.3.3); a server following its profile accepts keys in that form.",
			Explanation: "A key written in the profile's syntax is accepted, and the retry with it replays."},
			PerOperation: true, UsesOracle: true, Run: syntaxKeyAccepted},
		Case{Meta: Meta{ID: "syntax/cross-form", Family: "syntax", Requirements: []string{"IK-SYNTAX-2"}, Level: Info,
			Requirement: "RFC 9651 §2: a non-String item violates the field's constraints and the field is ignored by default; servers differ (quotes stripped, part of the key, rejected). Trap C5: a finding, unless it executes twice.",
			Explanation: "The same key in the other spelling (quoted vs bare) is recorded as replayed, rejected or a distinct key; a field silently ignored on every retry fails."},
			Proof:        ByRefusal | ByFresh,
			PerOperation: true, UsesOracle: true, Unfit: unlessSFKeys, Run: syntaxCrossForm},
		Case{Meta: Meta{ID: "syntax/malformed-sf-string", Family: "syntax", Requirements: []string{"IK-SYNTAX-3", "IK-SECURITY-1"}, Level: Should,
			Requirement: "draft §5: always validate the key as per its published specification before processing the request; malformed sf-strings get 4xx, never 5xx.",
			Explanation: "Unterminated, badly escaped, trailing-garbage and non-ASCII sf-strings are rejected with a 4xx, never a 5xx or an execution."},
			Proof:        ByRefusal,
			PerOperation: true, Skips: skipRawKeys, Unfit: unlessSFKeys, Run: syntaxMalformed},
		Case{Meta: Meta{ID: "syntax/repeated-header", Family: "syntax", Requirements: []string{"IK-SYNTAX-4"}, Level: Should,
			Requirement: "draft -00..-04: clients MUST NOT include more than one Idempotency-Key field; an Item field given as a list fails parsing (RFC 9651 §4.2). Expected: 400 or deterministic handling, never two executions.",
			Explanation: "Two key field lines, or two keys in one line, are rejected (or handled deterministically) and never execute on every retry."},
			Proof:        ByRefusal,
			PerOperation: true, UsesOracle: true, Unfit: notForKeyField("a field holds one key: there is no second one to send beside it"), Run: syntaxRepeatedHeader},
		Case{Meta: Meta{ID: "syntax/max-length", Family: "syntax", Requirements: []string{"IK-SYNTAX-5"}, Level: Should,
			Requirement: "Profile key_max_len (Stripe 255, Adyen 64): a key of exactly the maximum length is accepted and replayed; one character more gets a 4xx, never a 5xx and never truncation onto another key.",
			Explanation: "The longest allowed key works; a longer one is rejected rather than silently truncated."},
			Proof:        ByRefusal,
			PerOperation: true, UsesOracle: true, Skips: skipNoMaxLen, Run: syntaxMaxLength},
		Case{Meta: Meta{ID: "syntax/empty-key", Family: "syntax", Requirements: []string{"IK-SYNTAX-6", "IK-SECURITY-4"}, Level: Should,
			Requirement: "draft §5: validate the key against its published format; an empty key (or one below key_min_len) gets 400, and a blank one (\"   \", a valid sf-string) where the profile's blank_key says reject.",
			Explanation: "Empty and too-short keys (and blank ones, per blank_key) are rejected with a 4xx, never a 5xx or an execution."},
			Proof:        ByRefusal,
			PerOperation: true, Run: syntaxEmptyKey},
	)
}

func syntaxKeyAccepted(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first := e.Send(ctx, Req{Label: "original", Key: k})
	if first.Is5xx() || first.Err != nil { // a stale connection included
		return e.Inconclusive("the normal call failed: " + first.String())
	}
	if !first.OK() {
		return e.Unmet(fmt.Sprintf("a %s key accepted", e.Target.KeySyntax), "rejected: "+first.String())
	}
	retry := e.Send(ctx, Req{Label: "retry", Key: k})
	if v := e.lostConn(retry); v != nil {
		return *v
	}
	replayed, err := e.Replayed(ctx, first, retry, k)
	if err != nil {
		return e.undecided(err, "accepted, retry answered "+retry.String())
	}
	if !replayed {
		return e.inTTL(e.Unmet("the retry replays", retry.String()), first, retry)
	}
	return e.Pass(fmt.Sprintf("%s %s accepted and replayed", e.Target.KeyHeader, e.KeyValue(k)))
}

func syntaxCrossForm(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	other := e.otherForm(k)
	lines := []string{other}
	// The other form is the same request, key field aside (SameAs): a
	// double counting tokens credits its executions to k.
	count := func() (int, error) {
		if e.double.CountsScopes() {
			return e.Executions(ctx, k)
		}
		return e.linesCount(ctx, lines, k, other)
	}
	var before int
	if !hasMarks(e.Op) && e.HasOracle() {
		n, err := count()
		if err != nil {
			return e.Inconclusive(err.Error())
		}
		before = n
	}
	a := e.Send(ctx, Req{Label: "other form", KeyLines: lines, SameAs: k})
	b := e.Send(ctx, Req{Label: "other form again", KeyLines: lines, SameAs: k})
	observed := fmt.Sprintf("%s then %s: %s, then %s", e.KeyValue(k), other, a.String(), b.String())
	if v := e.lostConn(a, b); v != nil {
		return *v
	}
	switch {
	case a.Is5xx() || b.Is5xx():
		return e.Fail("a 4xx or a documented interpretation, never a 5xx", observed)
	case !a.OK():
		return e.Pass("rejected: " + observed)
	}
	// How many times did a and b execute? 0: a replayed the original
	// (same key); 1: a distinct key; 2: the field was ignored.
	var executed int
	switch {
	case hasMarks(e.Op):
		ids := map[string]bool{e.CreatedID(first): true}
		for _, r := range []wire.Resp{a, b} {
			if id := e.CreatedID(r); r.OK() && (id == "" || !ids[id]) {
				ids[id] = true
				executed++
			}
		}
	case e.HasOracle():
		n, err := count()
		if err != nil {
			return e.Inconclusive(err.Error() + ": " + observed)
		}
		executed = n - before
		observed += fmt.Sprintf("; %d executions (oracle)", executed)
	default:
		return e.undecided(errNoEvidence, observed)
	}
	switch {
	case executed >= 2:
		return e.inTTL(e.Fail("the other form rejected, replayed, or a distinct key; never an execution on every retry", "field ignored, executed twice: "+observed), first, a, b)
	case executed == 0:
		return e.Pass("same key (the spellings are equivalent): " + observed)
	}
	return e.Pass("a distinct key (quotes are part of the key): " + observed)
}

func skipRawKeys(t *apispec.Target, _ *apispec.Profile, _ *apispec.Operation) string {
	if t.KeySyntax != apispec.SFString {
		return "the target uses raw keys: sf-string parsing does not apply"
	}
	return ""
}

func syntaxMalformed(ctx context.Context, e *Env) Verdict {
	u := e.NewKey()
	return e.judgeInvalidKeys(ctx, "malformed sf-string", map[string][]string{
		"unterminated quote": {`"` + u},
		"bad escape":         {`"` + u + `\a"`},
		"trailing garbage":   {`"` + u + `" x`},
		"non-ASCII":          {`"` + u + "\u00e9\""},
	})
}

func syntaxRepeatedHeader(ctx context.Context, e *Env) Verdict {
	forms := map[string][]string{"two field lines": {e.KeyValue(e.NewKey()), e.KeyValue(e.NewKey())}}
	if e.Target.KeySyntax == apispec.SFString {
		forms["two keys in one line"] = []string{e.KeyValue(e.NewKey()) + ", " + e.KeyValue(e.NewKey())}
	}
	var seen []string
	for _, name := range sortedKeys(forms) {
		lines := forms[name]
		// The keys a lenient server may read: either line, or all of them
		// joined as one field value.
		keys := append(splitKeys(lines), strings.Join(lines, ", "))
		before := 0
		if e.HasOracle() {
			n, err := e.linesCount(ctx, lines, keys...)
			if err != nil {
				return e.Inconclusive(err.Error())
			}
			before = n
		}
		a := e.Send(ctx, Req{Label: name, KeyLines: lines})
		b := e.Send(ctx, Req{Label: name + " again", KeyLines: lines})
		seen = append(seen, fmt.Sprintf("%s: %s then %s", name, statusOf(a), statusOf(b)))
		if v := e.lostConn(a, b); v != nil {
			return *v
		}
		executed := -1 // unknown
		if e.HasOracle() {
			n, err := e.linesCount(ctx, lines, keys...)
			if err != nil {
				return e.Inconclusive(err.Error() + ": " + strings.Join(seen, "; "))
			}
			executed = n - before
			seen[len(seen)-1] += fmt.Sprintf(", %d executions (oracle)", executed)
		} else if a.OK() && b.OK() && hasMarks(e.Op) {
			executed = 1
			if id := e.CreatedID(a); id == "" || id != e.CreatedID(b) {
				executed = 2
			}
		}
		switch {
		case a.Is5xx() || b.Is5xx() || a.Err != nil || b.Err != nil:
			return e.Fail("400 or deterministic handling, never a 5xx", strings.Join(seen, "; "))
		case executed >= 2:
			return e.inTTL(e.Fail("never an execution on every retry", name+" executed twice: "+strings.Join(seen, "; ")), a, b)
		case !a.OK() && !b.OK() && executed > 0:
			return e.Unmet("a rejected request executes nothing", name+" rejected after executing: "+strings.Join(seen, "; "))
		case a.OK() && !b.OK():
			return e.inTTL(e.Unmet("deterministic handling", strings.Join(seen, "; ")), a, b)
		case a.OK() && b.OK() && executed < 0:
			return e.undecided(errNoEvidence, "both answered 2xx: "+strings.Join(seen, "; "))
		}
	}
	return e.Pass(strings.Join(seen, "; "))
}

// splitKeys returns the keys written in the field lines (sf-strings
// unquoted, several per line split at commas).
func splitKeys(lines []string) []string {
	var keys []string
	for _, l := range lines {
		for _, part := range strings.Split(l, ",") {
			keys = append(keys, strings.Trim(strings.TrimSpace(part), `"`))
		}
	}
	return keys
}

// keyOfLen returns a random key of n characters from [a-z0-9].
func keyOfLen(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

func skipNoMaxLen(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	if p.KeyMaxLen == 0 {
		return "profile key_max_len is not published (0)"
	}
	return ""
}

func syntaxMaxLength(ctx context.Context, e *Env) Verdict {
	n := e.Profile.KeyMaxLen
	longest := keyOfLen(n)
	if !e.Profile.KeyValid(longest) {
		if k := e.NewKey(); len(k) == n {
			longest = k
		} else {
			return e.Skip(fmt.Sprintf("profile key_format %q: no key of exactly key_max_len %d characters that idemcheck generates obeys it", e.Profile.KeyFormat, n))
		}
	}
	first := e.Send(ctx, Req{Label: fmt.Sprintf("key of %d chars", n), Key: longest})
	if v := e.lostConn(first); v != nil {
		return *v
	}
	if !first.OK() {
		return e.Unmet(fmt.Sprintf("a key of %d characters accepted", n), statusOf(first)+" "+first.String())
	}
	retry := e.Send(ctx, Req{Label: fmt.Sprintf("key of %d chars again", n), Key: longest})
	if v := e.lostConn(retry); v != nil {
		return *v
	}
	replayed, err := e.Replayed(ctx, first, retry, longest)
	if err != nil {
		return e.undecided(err, fmt.Sprintf("%d chars accepted, retry answered %s", n, retry.String()))
	}
	if !replayed {
		return e.inTTL(e.Unmet(fmt.Sprintf("the %d-character key replays", n), retry.String()), first, retry)
	}
	// The same request, key aside (SameAs: the marker's token stays the
	// shorter key's), so that a server truncating the key onto the
	// shorter one meets the same body and replays, not a changed one.
	over := e.Send(ctx, Req{Label: fmt.Sprintf("that key plus one char (%d chars)", n+1), Key: longest + "x", SameAs: longest})
	observed := fmt.Sprintf("%d chars accepted and replayed; %d chars: %s", n, n+1, over.String())
	if v := e.lostConn(over); v != nil {
		return *v
	}
	if e.unproven(over) {
		// A mismatch or in-flight answer is about a record: the only one
		// near is the shorter key's. A fresh key of n+1 characters tells
		// a refusal of the length (refused alike) from truncation
		// (executed: its shorter prefix was new).
		fresh := e.Send(ctx, Req{Label: fmt.Sprintf("a fresh key of %d chars (is the refusal about the length?)", n+1), Key: keyOfLen(n + 1)})
		observed += fmt.Sprintf("; %s is the profile's %s answer; a fresh key of %d chars: %s", over.StatusText(), e.signal(over), n+1, fresh.String())
		switch {
		case fresh.OK():
			return e.Unmet(fmt.Sprintf("a 4xx for %d characters, never truncation onto another key", n+1), "truncated onto the shorter key (it met that key's record, while a fresh key of the same length executed): "+observed)
		case !fresh.SameStatus(over):
			return e.Inconclusive("cannot tell a refusal of the length from truncation onto the shorter key's record: " + observed)
		}
		return e.Pass(observed)
	}
	// One execution under both spellings: the longer key executed nothing,
	// so its 2xx came from the shorter key's record.
	truncated, err := e.Replayed(ctx, first, over, longest, longest+"x")
	if err != nil {
		return e.undecided(err, observed)
	}
	switch {
	case truncated:
		return e.Fail(fmt.Sprintf("a 4xx for %d characters", n+1), "truncated onto the shorter key: "+observed)
	case over.Is5xx() || over.Err != nil:
		return e.Fail(fmt.Sprintf("a 4xx for %d characters, never a 5xx", n+1), observed)
	case over.OK():
		return e.Unmet(fmt.Sprintf("a 4xx for %d characters", n+1), observed)
	}
	return e.Pass(observed)
}

func syntaxEmptyKey(ctx context.Context, e *Env) Verdict {
	lines := map[string][]string{"empty": {e.KeyValue("")}}
	if e.Target.KeySyntax == apispec.Raw {
		lines["empty"] = []string{""}
	}
	if e.Target.KeyField() != "" && e.Profile.KeyRequired == apispec.No {
		// An empty message field is no key at all (proto3 cannot tell
		// them apart), and the profile lets a call go without one:
		// missing/optional-executes judges it.
		delete(lines, "empty")
	}
	if m := e.Profile.KeyMinLen; m > 1 {
		lines[fmt.Sprintf("%d chars (below key_min_len %d)", m-1, m)] = []string{e.KeyValue(keyOfLen(m - 1))}
	}
	blank := []string{e.KeyValue("   ")}
	if e.Profile.BlankKey == apispec.BlankReject {
		lines["blank"] = blank
		return e.judgeInvalidKeys(ctx, "empty, blank or too short key", lines)
	}
	if len(lines) == 0 {
		return e.Skip(NotApplicable + " to an empty key field where the key is optional: an empty field is no key (missing/optional-executes judges keyless calls)")
	}
	v := e.judgeInvalidKeys(ctx, "empty or too short key", lines)
	if v.Status != Pass {
		return v
	}
	// A blank key is a valid sf-string of a 1–255 character format: judged
	// only where the profile says the API accepts it (a 4xx is then a
	// miss), else recorded beside the verdict.
	r := e.Send(ctx, Req{Label: "blank", KeyLines: blank})
	if x := e.lostConn(r); x != nil {
		return *x
	}
	observed := v.Observed + "; blank: " + statusOf(r)
	switch {
	case r.Is5xx() || r.Err != nil:
		return e.Fail("a 4xx or an execution for a blank key, never a 5xx", observed)
	case e.Profile.BlankKey == apispec.BlankAccept && !r.OK():
		return e.Unmet("the blank key accepted (profile blank_key accept)", observed)
	case e.Profile.BlankKey == apispec.BlankAccept:
		return e.Pass(observed)
	}
	return e.Pass(observed + " (profile blank_key ?: recorded, not judged)")
}

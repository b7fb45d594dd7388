package scenarios

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/wire"
)

// What a replay and an idempotency error must not carry: the original's
// credential fields (replay/no-credentials) and anything of the stored
// request or response (security/conflict-no-leak).

// credentialFields are the response fields that hand a client a credential
// or a challenge for one (RFC 6265, RFC 9110 §11.6): a replay that repeats
// them gives every retry the first answer's session.
var credentialFields = []string{"Set-Cookie", "Set-Cookie2", "WWW-Authenticate", "Proxy-Authenticate", "Authentication-Info", "Proxy-Authentication-Info"}

// resentCredentials lists the credential field lines of first that replay
// carries again, leaving out the fields the profile's replay_metadata asks
// a replay to repeat and the lines control (a fresh execution's answer)
// carries too: a load balancer's stickiness cookie or a constant cookie is
// set on every answer, not re-sent from the stored one. A Set-Cookie is
// re-sent when the replay sets the same name=value; another field when a
// replay line equals the original's.
func (e *Env) resentCredentials(first, replay, control wire.Resp) (set, resent []string) {
	for _, name := range credentialFields {
		if slices.ContainsFunc(e.Profile.ReplayMetadata, func(m string) bool { return strings.EqualFold(m, name) }) {
			continue
		}
		every := map[string]bool{}
		for _, l := range control.Header.Values(name) {
			every[credentialID(name, l)] = true
		}
		again := map[string]bool{}
		for _, l := range replay.Header.Values(name) {
			again[credentialID(name, l)] = true
		}
		for _, l := range first.Header.Values(name) {
			id := credentialID(name, l)
			if every[id] {
				continue
			}
			set = append(set, name+": "+l)
			if again[id] || foldedInto(id, replay.Header.Values(name)) {
				resent = append(resent, name+": "+l)
			}
		}
	}
	return set, resent
}

// credentialID is what identifies a credential line: a cookie's
// name=value (its attributes may be rewritten), else the whole line.
func credentialID(name, line string) string {
	if strings.HasPrefix(strings.ToLower(name), "set-cookie") {
		v, _, _ := strings.Cut(line, ";")
		return strings.TrimSpace(v)
	}
	return strings.TrimSpace(line)
}

// foldedInto reports that id appears inside one of lines that is not id
// itself: a store that joined the field's lines still re-sends it.
func foldedInto(id string, lines []string) bool {
	for _, l := range lines {
		if strings.Contains(l, id) {
			return true
		}
	}
	return false
}

// listFields are header fields defined as lists (RFC 9110 §5.6.1): their
// lines may be combined or split at commas without changing the field
// (§5.3). Any other field is compared line by line: splitting a
// Content-Disposition filename or a cookie's Expires at its comma
// (gofiber/fiber PR #4693) changes it.
var listFields = map[string]bool{
	"Link": true, "Content-Language": true, "Content-Encoding": true, "Vary": true, "Cache-Control": true,
	"Allow": true, "Via": true, "Accept-Patch": true, "Access-Control-Expose-Headers": true,
	"Access-Control-Allow-Methods": true, "Access-Control-Allow-Headers": true, "Trailer": true,
}

// sameFieldLines reports whether the field lines got carry what want did:
// the same lines, or for a list field the same members however they are
// spread over lines.
func sameFieldLines(name string, want, got []string) bool {
	if slices.Equal(want, got) {
		return true
	}
	if !listFields[http.CanonicalHeaderKey(name)] {
		return false
	}
	return slices.Equal(listMembers(want), listMembers(got))
}

// listMembers splits a list field's lines into their trimmed members.
func listMembers(lines []string) []string {
	var out []string
	for _, l := range lines {
		for m := range strings.SplitSeq(l, ",") {
			if m = strings.TrimSpace(m); m != "" {
				out = append(out, m)
			}
		}
	}
	return out
}

// minDistinctive is the least length of a string value taken as
// distinctive of one execution: shorter ones ("usd", "ok") recur anywhere.
const minDistinctive = 6

// leakProbe is what security/conflict-no-leak looks for in a conflict
// answer: values of the stored response and request a client sending
// another payload must not learn, and the fingerprints a server may keep.
type leakProbe struct {
	// values name each distinctive value (what it is, where it was).
	values map[string]string
	// numbers are numeric values of the stored request, matched as whole
	// tokens.
	numbers map[string]string
}

// newLeakProbe collects the distinctive values of the stored answer first
// (those a fresh execution's answer control does not carry too), the
// values of the stored request stored that the conflicting request sent
// lacks, and the SHA-256 forms of both stored documents. Nothing the
// conflicting request itself carries (its body, URL and key) counts: a
// server may echo it.
func newLeakProbe(first, control wire.Resp, stored, sent []byte, sentURL, key string) leakProbe {
	lp := leakProbe{values: map[string]string{}, numbers: map[string]string{}}
	own := string(sent) + "\n" + sentURL + "\n" + key
	every := leafSet(control.Body)
	for ptr, v := range leaves(first.Body) {
		s, ok := v.(string)
		if !ok || len(s) < minDistinctive || every[s] || strings.Contains(own, s) || timeLike(s) {
			continue
		}
		lp.values[s] = "the stored response's " + ptr
	}
	sentLeaves := leafSet(sent)
	for ptr, v := range leaves(stored) {
		switch x := v.(type) {
		case string:
			if len(x) >= 4 && !sentLeaves[x] && !strings.Contains(own, x) {
				lp.values[x] = "the stored request's " + ptr
			}
		case json.Number:
			t := x.String()
			if len(strings.TrimLeft(t, "-")) >= 3 && !sentLeaves[t] {
				lp.numbers[t] = "the stored request's " + ptr
			}
		}
	}
	for what, doc := range map[string][]byte{"the stored request": stored, "the stored response": first.Body} {
		forms := [][]byte{doc}
		if c, err := jsonx.Canonical(doc); err == nil && len(doc) > 0 {
			forms = append(forms, c)
		}
		for _, f := range forms {
			sum := sha256.Sum256(f)
			h := hex.EncodeToString(sum[:])
			// a hex prefix of 16 characters (64 bits) is as telling
			lp.values[h[:16]] = "a SHA-256 of " + what
			lp.values[base64.StdEncoding.EncodeToString(sum[:])[:22]] = "a SHA-256 of " + what + " (base64)"
			lp.values[base64.RawURLEncoding.EncodeToString(sum[:])[:22]] = "a SHA-256 of " + what + " (base64url)"
		}
	}
	return lp
}

// found lists what of lp body carries.
func (lp leakProbe) found(body []byte) []string {
	low := strings.ToLower(string(body))
	var out []string
	for _, v := range slices.Sorted(maps.Keys(lp.values)) {
		if strings.Contains(low, strings.ToLower(v)) {
			out = append(out, fmt.Sprintf("%s (%q)", lp.values[v], shorten(v)))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(lp.numbers)) {
		if regexp.MustCompile(`(^|[^0-9.])` + regexp.QuoteMeta(n) + `([^0-9.]|$)`).Match(body) {
			out = append(out, fmt.Sprintf("%s (%s)", lp.numbers[n], n))
		}
	}
	return out
}

// shorten keeps a quoted value readable in a verdict.
func shorten(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// leaves maps each scalar leaf of a JSON document to its pointer (none
// when b is not JSON).
func leaves(b []byte) map[string]any {
	out := map[string]any{}
	doc, err := jsonx.Decode(b)
	if err != nil {
		return out
	}
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				walk(ptr+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), c)
			}
		case []any:
			for i, c := range x {
				walk(fmt.Sprintf("%s/%d", ptr, i), c)
			}
		case nil, bool:
		default:
			out[ptr] = x
		}
	}
	walk("", doc)
	return out
}

// leafSet is the set of b's scalar leaves as text.
func leafSet(b []byte) map[string]bool {
	out := map[string]bool{}
	for _, v := range leaves(b) {
		out[jsonx.ScalarText(v)] = true
	}
	return out
}

// timeLike reports a date or time: an error answer may carry its own,
// equal to the stored one's to the second.
func timeLike(s string) bool {
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339, time.RFC1123, time.RFC1123Z, time.DateTime, time.DateOnly} {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

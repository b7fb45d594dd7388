package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/wire"
)

// replayedHeaders are the representation headers a replay is expected to
// carry as the original did (IK-REPLAY-6). Date, request ids, rate-limit
// headers and Set-Cookie legitimately differ (trap C4) and are not compared.
var replayedHeaders = []string{"Content-Type", "Location", "Content-Location", "ETag", "Last-Modified", "Link", "Content-Language", "Content-Encoding", "Content-Disposition"}

// knownReplayMarkers are replay-marker headers used in the wild (spec.md
// B: Stripe's Idempotent-Replayed and look-alikes).
var knownReplayMarkers = []string{"Idempotent-Replayed", "Idempotency-Replayed", "X-Idempotent-Replayed", "X-Idempotency-Replayed", "Idempotency-Replay"}

// SameResponse reports whether replay reproduces first under the profile's
// comparison mode (IK-REPLAY-2); diff says how it differs.
func (e *Env) SameResponse(first, replay wire.Resp) (bool, string) {
	if !first.SameStatus(replay) {
		return false, fmt.Sprintf("status %s, replay %s", first.StatusText(), replay.StatusText())
	}
	mode := e.Profile.ReplayCompare
	switch {
	case bytes.Equal(apispec.ReplayForm(mode, first.Body), apispec.ReplayForm(mode, replay.Body)):
	case mode == apispec.CompareBytes:
		return false, "body bytes differ: " + bodyDiff(first.Body, replay.Body)
	default:
		return false, "bodies are not JSON-equal: " + bodyDiff(first.Body, replay.Body)
	}
	// Both answers' encodings recorded (a gRPC carrier's): protojson
	// leaves out what only the binary shows (unknown fields).
	if e.Profile.ReplayBinary && first.Binary != nil && replay.Binary != nil && !bytes.Equal(first.Binary, replay.Binary) {
		return false, "the messages are protojson-equal, but their binary encodings differ (replay_binary): " + binaryDiff(first.Binary, replay.Binary)
	}
	return true, ""
}

// binaryDiff says where two encodings part: their lengths and the first
// differing byte.
func binaryDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return fmt.Sprintf("%d bytes, replay %d bytes, first difference at byte %d (a field protojson does not show: unknown to the schema the server reflects)", len(a), len(b), i)
}

// HeaderDiff lists the header fields (metadata) named that first has and
// replay lacks or changes, compared as field lines (sameFieldLines): a
// value split into several lines, or lines folded into one, differs
// unless the field is a list.
func HeaderDiff(first, replay wire.Resp, names []string) []string {
	var diffs []string
	for _, h := range names {
		want := first.Header.Values(h)
		if len(want) == 0 {
			continue
		}
		got := replay.Header.Values(h)
		if sameFieldLines(h, want, got) {
			continue
		}
		d := fmt.Sprintf("%s: original %q, replay %q", h, strings.Join(want, ", "), strings.Join(got, ", "))
		if strings.Join(want, ",") == strings.Join(got, ",") || strings.Join(want, ", ") == strings.Join(got, ", ") {
			d = fmt.Sprintf("%s: original %d field lines %q, replay %d field lines %q (the same text spread over other lines: a value split at its commas, or lines folded, changes a field that is not a list)",
				h, len(want), want, len(got), got)
		}
		diffs = append(diffs, d)
	}
	return diffs
}

// errNoEvidence: neither created ids nor an oracle can tell a replay from
// a new execution. Equal bodies prove nothing: a server that ignores the
// key answers a constant body every time.
var errNoEvidence = errors.New("no id_pointer and no oracle: equal bodies do not show a replay (configure either)")

// Replayed reports whether second is first's replay rather than a new
// execution: both 2xx, and the same created id when the operation has an
// id pointer; otherwise, with an oracle, exactly one execution under keys
// (the key(s) both were sent under: first's execution, none for second).
// Without either, err is errNoEvidence; an oracle error is returned as is.
// e.undecided turns err into the verdict.
func (e *Env) Replayed(ctx context.Context, first, second wire.Resp, keys ...string) (bool, error) {
	if !first.OK() || !second.OK() {
		return false, nil
	}
	if hasMarks(e.Op) {
		id := e.CreatedID(first)
		return id != "" && id == e.CreatedID(second), nil
	}
	if !e.HasOracle() {
		return false, errNoEvidence
	}
	n, err := e.executionsUnder(ctx, keys...)
	return n == 1, err
}

// executionsUnder sums Executions over keys.
func (e *Env) executionsUnder(ctx context.Context, keys ...string) (int, error) {
	total := 0
	for _, k := range keys {
		n, err := e.Executions(ctx, k)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// undecided is the verdict when Replayed or the oracle could not decide:
// unverifiable without evidence, else inconclusive with the cause.
func (e *Env) undecided(err error, observed string) Verdict {
	if errors.Is(err, errNoEvidence) {
		return e.Unverifiable(err.Error() + ": " + observed)
	}
	return e.Inconclusive(err.Error() + ": " + observed)
}

// markers returns the known replay-marker headers present in h.
func markers(h http.Header) []string {
	var out []string
	for _, m := range knownReplayMarkers {
		if v := h.Get(m); v != "" {
			out = append(out, m+": "+v)
		}
	}
	return out
}

func bodyDiff(a, b []byte) string {
	short := func(x []byte) string {
		if len(x) > 120 {
			return string(x[:120]) + "..."
		}
		return string(x)
	}
	return fmt.Sprintf("original %q, replay %q", short(a), short(b))
}

// reorderedJSON re-encodes an object with its members in reverse order and
// extra whitespace: the same JSON document, different bytes (IK-REPLAY-7).
func reorderedJSON(b json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	var out bytes.Buffer
	out.WriteString("{\n  ")
	for i, k := range keys {
		if i > 0 {
			out.WriteString(" ,\n  ")
		}
		kb, _ := json.Marshal(k)
		out.Write(kb)
		out.WriteString(" : ")
		out.Write(m[k])
	}
	out.WriteString("\n}\n")
	return out.Bytes(), nil
}

// patchAt builds a merge patch setting the member at pointer p to v.
func patchAt(p string, v any) (json.RawMessage, error) {
	toks, err := jsonx.ParsePointer(p)
	if err != nil || len(toks) == 0 {
		return nil, fmt.Errorf("pointer %q: cannot build a patch", p)
	}
	var cur any = v
	for i := len(toks) - 1; i >= 0; i-- {
		cur = map[string]any{toks[i]: cur}
	}
	return json.Marshal(cur)
}

// DocLink reports whether an idempotency error links to documentation as
// the draft's §2.7 asks ("a body or Link header pointing to relevant
// documentation"): application/problem+json with a "type" member, a Link
// header with rel="describedby", or a JSON error body naming a documentation
// URL (Stripe's error.doc_url, or a "type" that is an absolute URL), at the
// top level or under "error".
func DocLink(r wire.Resp) (bool, string) {
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	doc, err := jsonx.Decode(r.Body)
	m, isObj := doc.(map[string]any)
	isObj = isObj && err == nil
	if strings.HasPrefix(ct, "application/problem+json") && isObj {
		if t, ok := m["type"].(string); ok && t != "" {
			return true, "problem+json type " + t
		}
	}
	for _, l := range r.Header.Values("Link") {
		if strings.Contains(strings.ToLower(l), `rel="describedby"`) || strings.Contains(strings.ToLower(l), "rel=describedby") {
			return true, "Link " + l
		}
	}
	if isObj && strings.Contains(ct, "json") {
		if how := jsonDocURL(m); how != "" {
			return true, "JSON body " + how
		}
		if inner, ok := m["error"].(map[string]any); ok {
			if how := jsonDocURL(inner); how != "" {
				return true, "JSON body error." + how
			}
		}
	}
	return false, fmt.Sprintf("Content-Type %q, no problem type, no documentation URL in the body, no Link rel=describedby", r.Header.Get("Content-Type"))
}

// docURLMembers are the JSON error members that carry a documentation URL
// in the wild (Stripe: doc_url; GitHub: documentation_url).
var docURLMembers = []string{"doc_url", "documentation_url", "docs_url", "help_url", "type"}

// jsonDocURL returns `member <url>` for the first member of m holding an
// absolute http(s) URL, or "".
func jsonDocURL(m map[string]any) string {
	for _, name := range docURLMembers {
		s, ok := m[name].(string)
		if !ok {
			continue
		}
		if u, err := url.Parse(s); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			return name + " " + s
		}
	}
	return ""
}

// docLinkVerdict judges whether the idempotency error r links to the docs
// (draft §2.7), under the profile's problem_json expectation.
func (e *Env) docLinkVerdict(r wire.Resp) Verdict {
	ok, how := DocLink(r)
	if e.Profile.ProblemJSON == apispec.Unknown {
		return e.Finding("problem_json", how)
	}
	if !ok {
		return e.Unmet("problem+json with a type, or Link rel=\"describedby\"", how)
	}
	return e.Pass(how)
}

// jsonEqual reports whether a and b are equal JSON documents (bodies that
// are not JSON: equal bytes). It is ReplayForm's json rule.
func jsonEqual(a, b []byte) bool {
	return bytes.Equal(apispec.ReplayForm(apispec.CompareJSON, a), apispec.ReplayForm(apispec.CompareJSON, b))
}

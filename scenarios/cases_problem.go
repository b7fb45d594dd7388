package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/wire"
)

// PROBLEM: the format of the idempotency errors themselves (draft §2.7
// examples: RFC 9457 problem details, or a Link rel="describedby").
func init() {
	register(
		Case{Meta: Meta{ID: "problem/problem-json", Family: "problem", Requirements: []string{"IK-PROBLEM-1"}, Level: Should,
			Requirement: "draft §2.7 examples, RFC 9457: the 400, 409 and 422 idempotency errors use application/problem+json with at least type and title; status, if present, equals the HTTP status.",
			Explanation: "Every idempotency error idemcheck can provoke is a well-formed problem document, or links its docs another way the draft allows: Link rel=\"describedby\", or a JSON body with a documentation URL (doc_url)."},
			PerOperation: true, Skips: skipNoProblemJSON, Unfit: unlessProblems, Run: problemJSON},
		Case{Meta: Meta{ID: "problem/docs-link", Family: "problem", Requirements: []string{"IK-PROBLEM-2"}, Level: May,
			Requirement: "draft §2.7, RFC 8288: an idempotency error MAY point to its documentation with a Link header rel=\"describedby\" instead of a problem type; either satisfies the docs-link requirement.",
			Explanation: "Each idempotency error links to documentation, by a problem type URI or by a well-formed Link rel=\"describedby\"."},
			PerOperation: true, Skips: skipNoProblemJSON, Unfit: unlessProblems, Run: problemDocsLink},
		Case{Meta: Meta{ID: "problem/no-store-stable-codes", Family: "problem", Requirements: []string{"IK-PROBLEM-3"}, Level: Info,
			Requirement: "Echo practice: idempotency errors carry Cache-Control: no-store and stable codes (idempotency_key_missing, ...).",
			Explanation: "Idempotency errors are marked no-store, and the same error provoked twice carries the same problem type."},
			PerOperation: true, Unfit: unlessProblems, Run: problemNoStoreStableCodes},
	)
}

// problemShape checks r as an RFC 9457 problem document.
func problemShape(r wire.Resp) (bool, string) {
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	if !strings.HasPrefix(ct, "application/problem+json") {
		return false, fmt.Sprintf("Content-Type %q", r.Header.Get("Content-Type"))
	}
	doc, err := jsonx.Decode(r.Body)
	m, ok := doc.(map[string]any)
	if err != nil || !ok {
		return false, "body is not a JSON object"
	}
	var bad []string
	for _, member := range []string{"type", "title"} {
		if s, ok := m[member].(string); !ok || s == "" {
			bad = append(bad, "no "+member)
		}
	}
	// RFC 9457 §3.1.2: status is a JSON number; the string "409" is not one.
	if st, present := m["status"]; present && st != json.Number(strconv.Itoa(r.Status)) {
		bad = append(bad, fmt.Sprintf("status member %v", st))
	}
	if len(bad) > 0 {
		return false, strings.Join(bad, ", ")
	}
	return true, "problem+json"
}

func problemJSON(ctx context.Context, e *Env) Verdict {
	return e.judgeErrors(ctx, "application/problem+json with type and title, status equal to the HTTP status (or Link rel=\"describedby\")", func(r wire.Resp) (bool, string) {
		ok, how := problemShape(r)
		if !ok && describedBy(r) != "" {
			return true, "Link rel=describedby instead (" + how + ")"
		}
		// The draft's SHOULD is "a body containing a link pointing to
		// relevant documentation"; problem+json is its example. A JSON body
		// that is not problem+json but links its docs (Stripe's doc_url) meets
		// it; a malformed problem document does not.
		if linked, link := DocLink(r); !ok && linked && strings.HasPrefix(link, "JSON body ") {
			return true, link + " instead (" + how + ")"
		}
		return ok, how
	})
}

// describedBy returns the target of a well-formed Link rel="describedby"
// ("<uri>; rel=describedby", quoted or not), or "".
func describedBy(r wire.Resp) string {
	for _, line := range r.Header.Values("Link") {
		for _, link := range strings.Split(line, ",") {
			parts := strings.Split(link, ";")
			target := strings.TrimSpace(parts[0])
			if len(target) < 3 || target[0] != '<' || target[len(target)-1] != '>' {
				continue
			}
			for _, p := range parts[1:] {
				name, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(strings.TrimSpace(name), "rel") && strings.EqualFold(strings.Trim(strings.TrimSpace(val), `"`), "describedby") {
					return target[1 : len(target)-1]
				}
			}
		}
	}
	return ""
}

func problemDocsLink(ctx context.Context, e *Env) Verdict {
	return e.judgeErrors(ctx, "a problem type URI or a Link rel=\"describedby\" on every idempotency error", func(r wire.Resp) (bool, string) {
		if u := describedBy(r); u != "" {
			return true, "Link rel=describedby <" + u + ">"
		}
		ok, how := DocLink(r)
		if ok && strings.HasPrefix(how, "Link ") {
			return false, "malformed " + how + " (want <uri>; rel=\"describedby\")"
		}
		return ok, how
	})
}

func problemNoStoreStableCodes(ctx context.Context, e *Env) Verdict {
	first, missed := e.idempotencyErrors(ctx)
	if len(first) == 0 {
		return e.Inconclusive("no idempotency error could be provoked: " + strings.Join(missed, "; "))
	}
	second, _ := e.idempotencyErrors(ctx)
	again := map[string]wire.Resp{}
	for _, x := range second {
		again[x.name] = x.r
	}
	var noStore, unstable, seen []string
	for _, x := range first {
		cc := strings.ToLower(x.r.Header.Get("Cache-Control"))
		if !strings.Contains(cc, "no-store") {
			noStore = append(noStore, fmt.Sprintf("%s (Cache-Control %q)", x.name, x.r.Header.Get("Cache-Control")))
		}
		code := problemCode(x.r)
		if y, ok := again[x.name]; ok && (y.Status != x.r.Status || problemCode(y) != code) {
			unstable = append(unstable, fmt.Sprintf("%s: %d %q then %d %q", x.name, x.r.Status, code, y.Status, problemCode(y)))
		}
		seen = append(seen, fmt.Sprintf("%s %d %q", x.name, x.r.Status, code))
	}
	observed := strings.Join(seen, "; ")
	if len(noStore) > 0 || len(unstable) > 0 {
		return e.Unmet("Cache-Control: no-store and the same code each time", fmt.Sprintf("%s; without no-store: %v; unstable: %v", observed, noStore, unstable))
	}
	return e.Pass(observed)
}

// problemCode is the error's machine-readable code: the problem type, else
// a "code" member, else "".
func problemCode(r wire.Resp) string {
	doc, err := jsonx.Decode(r.Body)
	m, ok := doc.(map[string]any)
	if err != nil || !ok {
		return ""
	}
	for _, member := range []string{"type", "code"} {
		if s, ok := m[member].(string); ok && s != "" {
			return s
		}
	}
	if inner, ok := m["error"].(map[string]any); ok {
		if s, ok := inner["code"].(string); ok {
			return s
		}
	}
	return ""
}

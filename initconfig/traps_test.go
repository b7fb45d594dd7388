package initconfig

import (
	"context"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"go.yaml.in/yaml/v3"
)

// TestNoTraps: init guesses nothing that makes a correct API look broken
// (issue 29), one row per rule, each against a document in
// testdata/traps: the invalid variant never expects a status the document
// gives another meaning, the commented double answers an id, and the key
// syntax is the draft's unless the document shows otherwise.
func TestNoTraps(t *testing.T) {
	setTokens(t)
	type written struct {
		target  *apispec.Target
		profile *apispec.Profile
		text    string
	}
	cache := map[string]written{}
	load := func(t *testing.T, doc string) written {
		t.Helper()
		if w, ok := cache[doc]; ok {
			return w
		}
		out, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: doc, Command: "idemcheck init"})
		if err != nil {
			t.Fatal(err)
		}
		target, profile, err := apispec.ParseConfig(out)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		cache[doc] = written{target, profile, string(out)}
		return cache[doc]
	}
	// invalid is the status of op's invalid variant and its written line.
	invalid := func(t *testing.T, w written, op string) (int, string) {
		t.Helper()
		for _, o := range w.target.Operations {
			if o.Name != op {
				continue
			}
			v, ok := o.Variants[apispec.VariantInvalid]
			if !ok {
				t.Fatalf("%s: no invalid variant\n%s", op, w.text)
			}
			_, after, _ := strings.Cut(w.text, "- name: "+op+"\n")
			for _, line := range strings.Split(after, "\n") {
				if strings.Contains(line, "invalid: {") {
					return v.Status, line
				}
			}
		}
		t.Fatalf("no operation %s\n%s", op, w.text)
		return 0, ""
	}
	const provider, bare = "testdata/traps/provider.yaml", "testdata/traps/bare-key.yaml"
	for _, tc := range []struct {
		rule, doc string
		check     func(t *testing.T, w written)
	}{
		{"invalid: not the 422 the document describes as a reused key, but its 400", provider, func(t *testing.T, w written) {
			if st, line := invalid(t, w, "createOrder"); st != 400 || !strings.Contains(line, `not 422: its 422 says "another request body"`) {
				t.Errorf("status %d: %s", st, line)
			}
			if got := w.profile.MismatchStatus; len(got) != 1 || got[0] != 422 {
				t.Errorf("mismatch_status %v, want the described 422", got)
			}
		}},
		{"invalid: the only declared status means a mismatch: no status, a TODO", provider, func(t *testing.T, w written) {
			if st, line := invalid(t, w, "refundOrder"); st != 0 || !strings.Contains(line, "TODO: the status the API answers a bad body with") ||
				!strings.Contains(line, `its 422 says "mismatch"`) {
				t.Errorf("status %d: %s", st, line)
			}
		}},
		{"invalid: a status init makes mismatch_status elsewhere is not taken", provider, func(t *testing.T, w written) {
			if st, line := invalid(t, w, "createPayout"); st != 0 || !strings.Contains(line, "not 422, the mismatch_status: the 422 response of createOrder") {
				t.Errorf("status %d: %s", st, line)
			}
		}},
		{"invalid: a status with no other meaning is kept", bare, func(t *testing.T, w written) {
			if st, line := invalid(t, w, "createTransfer"); st != 400 || strings.Contains(line, "TODO") {
				t.Errorf("status %d: %s", st, line)
			}
		}},
		{"the commented double route answers an id, with a TODO to match the provider", provider, func(t *testing.T, w written) {
			var route map[string]any
			for _, b := range commentedBlocks(w.text) {
				var m struct {
					Downstream struct{ Routes []map[string]any }
				}
				if yaml.Unmarshal([]byte(b.text), &m) == nil && len(m.Downstream.Routes) == 1 {
					route = m.Downstream.Routes[0]
				}
			}
			resp, _ := route["response"].(map[string]any)
			body, _ := resp["body"].(map[string]any)
			if body["id"] != "pay_{seq}" || !strings.Contains(w.text, "# TODO: answer as the provider does") {
				t.Errorf("route %v, want a body with id pay_{seq} and a TODO\n%s", route, w.text)
			}
		}},
		{"key syntax: a uuid format keeps the draft's sf-string", provider, func(t *testing.T, w written) {
			if w.target.KeySyntax != apispec.SFString || w.profile.KeyFormat != "uuid" {
				t.Errorf("key_syntax %s, key_format %q; want sf-string, uuid", w.target.KeySyntax, w.profile.KeyFormat)
			}
		}},
		{"key syntax: an example showing the key bare is raw", bare, func(t *testing.T, w written) {
			if w.target.KeySyntax != apispec.Raw || !strings.Contains(w.text, "shown bare") {
				t.Errorf("key_syntax %s; want raw, saying why", w.target.KeySyntax)
			}
		}},
	} {
		t.Run(tc.rule, func(t *testing.T) { tc.check(t, load(t, tc.doc)) })
	}
}

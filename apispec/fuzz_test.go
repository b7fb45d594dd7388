package apispec

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// FuzzParseConfig feeds arbitrary YAML to the config loader. Properties:
// an error is one line (the CLI prints it as is, exit 2); an accepted
// config validates, and every body and patch it produced is valid JSON.
func FuzzParseConfig(f *testing.F) {
	for _, p := range []string{"testdata/full.yaml", "../examples/orders.yaml", "../examples/reference.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "base_url: http://127.0.0.1:1\n", "colour: red\n", "ttl: 2s\nlease: x\n",
		"base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\noperations: [{name: c, method: POST, path: /c, body: {a: [1, 2]}}]\n",
		"operations: [{name: c, method: POST, path: /c, body: &a {x: *a}}]\n",
		"profile: {preset: stripe, overrides: {cache_5xx: maybe}}\n", "- a\n- b\n", "key_syntax: weird\n",
		"operations: [{name: c, method: POST, path: /c, mutations: [{name: m, patch: {a: null}}]}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var (
			tg  *Target
			p   *Profile
			err error
		)
		done := make(chan struct{})
		go func() { defer close(done); tg, p, err = ParseConfig(raw) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			// The fuzzer has no per-input timeout: a hang would only stall it.
			panic(fmt.Sprintf("ParseConfig did not return within 10s on %q", raw))
		}
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\r\n") {
				t.Fatalf("error is not one line: %q", msg)
			}
			return
		}
		if verr := p.Validate(); verr != nil {
			t.Fatalf("accepted profile does not validate: %v", verr)
		}
		if verr := tg.Validate(); verr != nil {
			t.Fatalf("accepted target does not validate: %v", verr)
		}
		for _, op := range tg.Operations {
			if len(op.Body) > 0 && !json.Valid(op.Body) {
				t.Fatalf("operation %s: body %q is not JSON", op.Name, op.Body)
			}
			for _, m := range op.Mutations {
				if len(m.Patch) > 0 && !json.Valid(m.Patch) {
					t.Fatalf("operation %s mutation %s: patch %q is not JSON", op.Name, m.Name, m.Patch)
				}
			}
			for name, v := range op.Variants {
				if len(v.Patch) > 0 && !json.Valid(v.Patch) {
					t.Fatalf("operation %s variant %s: patch %q is not JSON", op.Name, name, v.Patch)
				}
			}
		}
	})
}

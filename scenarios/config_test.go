package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfigFull(t *testing.T) {
	tg, p, err := LoadConfig("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "ietf" || p.KeyMaxLen != 255 || p.Cache5xx != No || p.ScopeEndpoint != ScopeIndependent || p.MismatchStatus[0] != 422 {
		t.Errorf("profile overrides not applied on the ietf preset: %+v", p)
	}
	op := tg.Operations[0]
	if string(op.Body) != `{"amount":1000,"currency":"usd","description":"idemcheck"}` {
		t.Errorf("body = %s", op.Body)
	}
	if string(op.Mutations[1].Patch) != `{"metadata":{"order":"idemcheck-2"}}` || op.Variants[VariantSlow].Duration != 1500*time.Millisecond {
		t.Errorf("mutations/variants = %+v", op)
	}
	if tg.KeySyntax != SFString || tg.TTL != 2*time.Second || len(tg.Principals) != 2 || tg.Oracle.Pointer != "/executions" {
		t.Errorf("target = %+v", tg)
	}
	for _, n := range []Need{NeedOracle, NeedEffects, NeedIDPointer, NeedSecondPrincipal, NeedSlow, NeedBusinessError, NeedTransientError, NeedInvalid, NeedTTL, NeedLease} {
		if !Supplies(tg, n) {
			t.Errorf("Supplies(%s) = false", n)
		}
	}
	if Supplies(tg, NeedSecondOperation) {
		t.Error("Supplies(second-operation) with one operation")
	}
}

// TestConfigErrors: every bad input gives one line naming the field.
func TestConfigErrors(t *testing.T) {
	const base = "base_url: http://127.0.0.1:1\nprincipals: [{name: a, headers: {Authorization: Bearer a}}]\n"
	const op = "operations: [{name: c, method: POST, path: /c, body: {amount: 1}}]\n"
	cases := []struct {
		name, yaml, want string
	}{
		{"malformed YAML", "base_url: [unclosed\n", "line"},
		{"empty file", "", "empty config"},
		{"unknown top-level field", base + op + "colour: red\n", `line 4: unknown field "colour"`},
		{"unknown operation field", base + "operations: [{name: c, method: POST, path: /c, verb: x}]\n", `unknown field "verb"`},
		{"unknown profile", base + op + "profile: {preset: paypal}\n", `unknown profile "paypal" (valid: ietf, lenient, reference, seeds, stripe)`},
		{"unknown override", base + op + "profile: {overrides: {mismatch: [409]}}\n", `line 4: profile.overrides: unknown field "mismatch"`},
		{"bad override value", base + op + "profile: {overrides: {cache_5xx: maybe}}\n", `"maybe" is not true, false or "?"`},
		{"bad replay_compare", base + op + "profile: {overrides: {replay_compare: fuzzy}}\n", "profile replay_compare \"fuzzy\""},
		{"bad pointer", base + "operations: [{name: c, method: POST, path: /c, id_pointer: id}]\n", `operations[0].id_pointer "id": a JSON pointer must be empty or start with '/'`},
		{"bad pointer escape", base + op + "oracle: {url: /e, pointer: /a~2}\n", `oracle.pointer "/a~2"`},
		{"oracle url", base + op + "oracle: {url: \"effects?key={key}\", pointer: /n}\n", `oracle.url "effects?key={key}"`},
		{"oracle principal out of range", base + op + "oracle: {url: /e, pointer: /n, principal: 3}\n", "oracle.principal 3"},
		{"bad method", base + "operations: [{name: c, method: FETCH, path: /c}]\n", `operations[0].method "FETCH"`},
		{"relative base_url", "base_url: /api\nprincipals: [{name: a}]\n" + op, `base_url "/api"`},
		{"no principals", "base_url: http://127.0.0.1:1\n" + op, "principals: at least one"},
		{"duplicate principal", "base_url: http://127.0.0.1:1\nprincipals: [{name: a}, {name: a}]\n" + op, `principals[1].name "a"`},
		{"patch not an object", base + "operations: [{name: c, method: POST, path: /c, body: {a: 1}, mutations: [{name: m, patch: [1]}]}]\n", "operations[0].mutations[0].patch: want a JSON object"},
		{"body not an object", base + "operations: [{name: c, method: POST, path: /c, body: [1, 2]}]\n", "operations[0].body: want a JSON object"},
		{"unknown variant", base + "operations: [{name: c, method: POST, path: /c, body: {a: 1}, variants: {crashy: {patch: {a: 2}}}}]\n", "operations[0].variants.crashy: unknown variant"},
		{"slow without duration", base + "operations: [{name: c, method: POST, path: /c, body: {a: 1}, variants: {slow: {patch: {d: 1}}}}]\n", "operations[0].variants.slow.duration"},
		{"bad duration", base + op + "ttl: soon\n", "line 4: ttl: cannot unmarshal"},
		{"bad nested type", base + "operations: [{name: c, method: POST, path: /c, variants: {slow: {patch: {a: 1}, duration: 1s, status: fast}}}]\n", "operations[0].variants.slow.status: cannot unmarshal"},
		{"negative duration", base + op + "lease: -1s\n", "must not be negative"},
		{"key header in op headers", base + "operations: [{name: c, method: POST, path: /c, headers: {idempotency-key: x}}]\n", "the key header is set by the suite"},
		{"no operations", base, "operations: at least one"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := LoadConfig(path)
			if err == nil {
				t.Fatalf("no error for %s", c.name)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "config "+path+": ") {
				t.Errorf("error %q: want one line starting with the file and containing %q", msg, c.want)
			}
		})
	}
}

func TestProfileByName(t *testing.T) {
	for _, n := range ProfileNames() {
		p, err := ProfileByName(n)
		if err != nil || p.Validate() != nil {
			t.Errorf("preset %s: %v %v", n, err, p.Validate())
		}
	}
	a, _ := ProfileByName("ietf")
	a.MismatchStatus[0] = 499
	if b, _ := ProfileByName("ietf"); b.MismatchStatus[0] != 422 {
		t.Error("ProfileByName returns shared slices: a caller's change leaked into the preset")
	}
}

func TestGlobSelection(t *testing.T) {
	tg, _, err := LoadConfig("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tg.Operations = append(tg.Operations, tg.Operations[0])
	tg.Operations[1].Name = "refunds"
	names := func(o RunOptions) []string {
		ps, err := Plan(tg, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.Name())
		}
		return out
	}
	cases := []struct {
		name string
		o    RunOptions
		want []string
	}{
		{"exact name", RunOptions{Run: []string{"replay/same-status@refunds"}}, []string{"replay/same-status@refunds"}},
		{"case ID selects every operation", RunOptions{Run: []string{"replay/same-status"}}, []string{"replay/same-status@charges", "replay/same-status@refunds"}},
		{"star stays in its segment", RunOptions{Run: []string{"missing/*@charges"}}, []string{"missing/optional-executes@charges", "missing/problem-link@charges", "missing/rejected@charges", "missing/repeat-fails-again@charges"}},
		{"star does not cross /", RunOptions{Run: []string{"*same-status"}}, nil},
		{"double star segment crosses /", RunOptions{Run: []string{"**/same-status"}}, []string{"replay/same-status@charges", "replay/same-status@refunds"}},
		{"double star inside a segment is a star", RunOptions{Run: []string{"**same-status"}}, nil},
		{"alternatives", RunOptions{Run: []string{"{replay,scope}/same-status@charges"}}, []string{"replay/same-status@charges"}},
		{"character class", RunOptions{Run: []string{"replay/same-[sb]*@charges"}}, []string{"replay/same-body@charges", "replay/same-status@charges"}},
		{"skip wins", RunOptions{Run: []string{"missing/*"}, Skip: []string{"missing/*-*", "**/*@refunds"}}, []string{"missing/rejected@charges"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := names(c.o)
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
	// An empty pattern, an unclosed class and a trailing escape are
	// refused before any traffic.
	for _, bad := range []string{"", "[ab", `same\`} {
		if _, err := Plan(tg, nil, RunOptions{Skip: []string{bad}}); err == nil {
			t.Errorf("glob %q accepted", bad)
		}
	}
}

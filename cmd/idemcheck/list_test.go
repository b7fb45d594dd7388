package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestListOracleModes: list says how each case instance counts executions,
// in text and JSON.
func TestListOracleModes(t *testing.T) {
	const base = "base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\n"
	global := writeTemp(t, "global.yaml", base+"oracle: {url: /_effects, pointer: /total}\n"+
		"operations: [{name: things, method: POST, path: /things, body: {a: 1}}]\n")
	ids := writeTemp(t, "ids.yaml", base+"operations: [{name: things, method: POST, path: /things, body: {a: 1}, id_pointer: /id}]\n")
	for _, tc := range []struct {
		name, rule string
		args       []string
		mode       string // of replay/single-execution, which counts effects
	}{
		{"per-key", "the reference contract's oracle counts per key", []string{"list"}, "per-key"},
		{"global", "an oracle URL without {key} is a global counter: serial", []string{"list", "--config", global}, "global-serial"},
		{"identity", "no oracle, an id pointer: distinct created ids", []string{"list", "--config", ids}, "identity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, append(tc.args, "--run", "replay/single-execution", "--run", "replay/same-status")...)
			if r.code != 0 {
				t.Fatalf("rule: %s: exit %d\n%s%s", tc.rule, r.code, r.stdout, r.stderr)
			}
			lines := strings.Split(r.stdout, "\n")
			if !strings.Contains(lines[0], "ORACLE") {
				t.Errorf("rule: %s: header %q lacks ORACLE", tc.rule, lines[0])
			}
			for _, l := range lines {
				f := strings.Fields(l)
				switch {
				case len(f) < 4:
				case strings.HasPrefix(f[0], "replay/single-execution@") && f[3] != tc.mode:
					t.Errorf("rule: %s: %q, want mode %s", tc.rule, l, tc.mode)
				case strings.HasPrefix(f[0], "replay/same-status@") && f[3] != "none":
					t.Errorf("rule: %s: %q, want mode none (counts nothing)", tc.rule, l)
				}
			}
			j := runCLI(t, append(tc.args, "--run", "replay/single-execution", "--format", "json")...)
			var planned []struct {
				OracleMode string `json:"oracle_mode"`
			}
			if err := json.Unmarshal([]byte(j.stdout), &planned); err != nil || len(planned) == 0 {
				t.Fatalf("rule: %s: JSON %v: %s", tc.rule, err, j.stdout)
			}
			for _, p := range planned {
				if p.OracleMode != tc.mode {
					t.Errorf("rule: %s: JSON oracle_mode %q, want %s", tc.rule, p.OracleMode, tc.mode)
				}
			}
		})
	}
}

// TestListGaps: list ends with the MUST requirements the config cannot
// verify, each with its fix: ids alone cannot see an execution that
// answered an error, a missing slow variant leaves the in-flight MUSTs
// untested; with an oracle and a slow variant those lines go.
func TestListGaps(t *testing.T) {
	const base = "base_url: http://127.0.0.1:1\nprincipals: [{name: a}, {name: b}]\n"
	ids := writeTemp(t, "ids.yaml", base+"operations: [{name: orders, method: POST, path: /orders, body: {a: 1}, id_pointer: /order_id}]\n")
	full := writeTemp(t, "full.yaml", base+"oracle: {sql: {dsn: \"postgres://app:pw@127.0.0.1:1/shop\", query: \"select count(*) from orders where k = $1\"}}\n"+
		"operations: [{name: orders, method: POST, path: /orders, body: {a: 1}, id_pointer: /order_id, variants: {slow: {patch: {delay: 1}, duration: 1s}}}]\n")
	globs := []string{"--run", "mismatch/original-survives", "--run", "scope/other-user-in-flight"}
	r := runCLI(t, append([]string{"list", "--config", ids}, globs...)...)
	for _, want := range []string{
		"evidence: created ids only (id_pointer): they cannot see an execution that answered an error",
		"MUST requirements this config cannot verify (2):",
		"mismatch/original-survives@orders (IK-MISMATCH-3): created ids cannot see an execution that answered an error: add oracle:",
		"scope/other-user-in-flight@orders (IK-SCOPE-1): add a slow variant",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("ids only: exit %d, want %q in\n%s", r.code, want, r.stdout)
		}
	}
	r = runCLI(t, append([]string{"list", "--config", full}, globs...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "Every MUST requirement listed that applies to this API is verifiable with this config.") || strings.Contains(r.stdout, "pw@") ||
		!strings.Contains(r.stdout, `evidence: sql "select count(*) from orders where k = $1" (per key)`) {
		t.Errorf("oracle and slow variant: exit %d, want no gap and no password\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The opt-in families (events, replicas) are no gaps of an API without
	// an outbox or replicas: listed apart, as not asked for.
	r = runCLI(t, "list", "--config", full, "--run", "outbox/**", "--run", "replicas/**", "--run", "scope/other-user-in-flight")
	before, after, _ := strings.Cut(r.stdout, "Opt-in families not asked for")
	if r.code != 0 || !strings.Contains(before, "Every MUST requirement listed that applies to this API is verifiable") ||
		!strings.Contains(after, "replicas/") || !strings.Contains(after, "outbox/") || strings.Contains(before, "MUST requirements this config cannot verify") {
		t.Errorf("opt-in families: exit %d, want them apart as not asked for, no gap\n%s%s", r.code, r.stdout, r.stderr)
	}
}

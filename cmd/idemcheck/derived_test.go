package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// TestDerivedMutation: a config that declares no mutations still gets
// mismatch/changed-body: `list` says which member the derived mutation
// changes, `run` sends it and judges it (the reference fingerprints the
// body: 422; one that ignores the body replays the old response: fail).
func TestDerivedMutation(t *testing.T) {
	for _, tc := range []struct {
		name, defect, status, observed string
		code                           int
	}{
		{"fingerprint", "", "pass", "derived: /amount 1000 → 1001: 422", exitOK},
		{"no-fingerprint", "no-fingerprint", "fail", "derived: /amount 1000 → 1001: replayed the old response for a different payload", exitFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := demo.Options{}
			if tc.defect != "" {
				o.Defects = []string{tc.defect}
			}
			cfg := filepath.Join(t.TempDir(), "idemcheck.yaml")
			if err := os.WriteFile(cfg, []byte(`base_url: `+demotest.Serve(t, o)+`
key_header: Idempotency-Key
timeout: 10s
principals: [{name: alice, headers: {Authorization: Bearer alice}}]
oracle: {url: "/v1/effects?key={key}", pointer: /executions}
operations:
  - name: charges
    method: POST
    path: /v1/charges
    body: {amount: 1000, currency: usd}
    id_pointer: /id
`), 0o600); err != nil {
				t.Fatal(err)
			}
			l := runCLI(t, "list", "--config", cfg, "--run", "mismatch/changed-body")
			if want := "operations[0] charges declares no body mutation: the mismatch cases send a mutation derived from its body (/amount 1000 → 1001)"; l.code != exitOK || !strings.Contains(l.stdout, want) {
				t.Errorf("list: exit %d, want 0 and %q:\n%s", l.code, want, l.stdout)
			}
			r, res := runReport(t, "--config", cfg, "--run", "mismatch/changed-body")
			if r.code != tc.code || len(res) != 1 || res[0].Status != tc.status || !strings.Contains(res[0].Observed, tc.observed) {
				t.Errorf("run: exit %d, results %+v; want exit %d and %s with %q; stderr %s", r.code, res, tc.code, tc.status, tc.observed, r.stderr)
			}
		})
	}
}

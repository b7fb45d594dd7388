package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/knobless"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// TestPreflightRefusesBrokenSetup: a setup whose normal request fails is
// named and refused (exit 4) by run, chaos and load before any verdict: a
// base URL with a wrong path (every request 404), a normal body the
// reference answers 503, a double whose route answers {} where the API
// needs the provider's id. The message names the status and a body
// excerpt, and, with a double, what the API called and what it answered.
func TestPreflightRefusesBrokenSetup(t *testing.T) {
	ref := demotest.Serve(t, demo.Options{})
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	transient := write("transient.yaml", `base_url: `+ref+`
key_header: Idempotency-Key
timeout: 10s
principals: [{name: alice, headers: {Authorization: Bearer alice}}]
oracle: {url: "/v1/effects?key={key}", pointer: /executions}
operations:
  - name: charges
    method: POST
    path: /v1/charges
    body: {amount: 1000, currency: usd, fail: transient}
    id_pointer: /id
`)
	addr := testenv.FreeAddr(t)
	shop := serveShop(t, knobless.Options{ProviderURL: "http://" + addr})
	empty := write("empty-route.yaml", strings.Replace(knobless.Config(shop, addr, downstreamOracle),
		`{status: 200, body: {id: "pay_{seq}", status: succeeded}}`, `{status: 200, body: {}}`, 1))
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"run-wrong-path", []string{"run", "--target", ref + "/api"},
			[]string{"charges: POST " + ref + "/api/v1/charges answered 404 404 page not found", "refunds: POST"}},
		{"chaos-wrong-path", []string{"chaos", "--target", ref + "/api", "--ops", "20"},
			[]string{"charges: POST " + ref + "/api/v1/charges answered 404"}},
		{"load-wrong-path", []string{"load", "--target", ref + "/api", "--rate", "10", "--duration", "1s"},
			[]string{"charges: POST " + ref + "/api/v1/charges answered 404"}},
		{"run-503", []string{"run", "--config", transient},
			[]string{"charges: POST " + ref + "/v1/charges answered 503 {", "Temporarily unavailable"}},
		{"run-double-empty", []string{"run", "--config", empty},
			[]string{"orders: POST " + shop + "/v1/orders answered 502 {\"error\":\"the payment provider answered no payment id\"}",
				"the API called payments (POST /v1/payments); the double answered 200 {} and the API answered 502"}},
		{"chaos-double-empty", []string{"chaos", "--config", empty, "--ops", "20"},
			[]string{"the double answered 200 {} and the API answered 502"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != exitUnreachable {
				t.Fatalf("exit %d, want %d (the setup does not work, nothing is judged); stdout %s; stderr %s", r.code, exitUnreachable, r.stdout, r.stderr)
			}
			for _, w := range append(tc.want, "the normal request does not succeed") {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stdout, "pass") || strings.Contains(r.stdout, "fail") {
				t.Errorf("a verdict was printed on a broken setup:\n%s", r.stdout)
			}
		})
	}
}

package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/examples/variants"
	"github.com/idemcheck/idemcheck/internal/bookings"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// verdicts are the exit codes of a run that reached a verdict: pass,
// fail, not enough evidence. A usage error (2) or an unreachable target
// (4) is not one.
var verdicts = map[int]bool{exitOK: true, exitFail: true, exitIncomplete: true}

// TestInitOpenAPIRuns: for three OpenAPI documents of different styles,
// `init --openapi` writes a config that `list` accepts without edits and
// with which `run` reaches a verdict against a server implementing the
// document, only the secrets given (IDEMCHECK_TOKEN_1/2). The three
// servers are correct, so the verdict must not be a fail.
func TestInitOpenAPIRuns(t *testing.T) {
	for _, tc := range []struct {
		name, doc    string
		base         func(t *testing.T) string
		tok1, tok2   string
		explanation  string
		instanceLine string
	}{
		{"reference", "../../examples/payments.openapi.yaml",
			func(t *testing.T) string { return demotest.Serve(t, demo.Options{TTL: 2 * time.Second}) },
			"alice", "bob", "3.0 YAML with examples, the reference", "createCharge"},
		{"variants-core", "../../initconfig/testdata/charges.json",
			func(t *testing.T) string {
				srv := httptest.NewServer(variants.New(variants.Choices{TTL: time.Hour}))
				t.Cleanup(srv.Close)
				return srv.URL + "/api"
			},
			"tok_alice", "tok_bob", "3.1 JSON without examples, examples/variants' correct core", "charge"},
		{"bookings", "../../initconfig/testdata/bookings.yaml",
			func(t *testing.T) string {
				srv := httptest.NewServer(bookings.New(2 * time.Second))
				t.Cleanup(srv.Close)
				return srv.URL
			},
			"key_ann", "key_ben", "3.1 YAML, $refs and an API-key scheme, internal/bookings", "bookRoom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("IDEMCHECK_TOKEN_1", tc.tok1)
			t.Setenv("IDEMCHECK_TOKEN_2", tc.tok2)
			cfg := filepath.Join(t.TempDir(), "idemcheck.yaml")
			r := runCLI(t, "init", "--openapi", tc.doc, "-o", cfg)
			if r.code != exitOK || !strings.Contains(r.stderr, "init: wrote "+cfg) {
				t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
			}
			base := tc.base(t)
			l := runCLI(t, "list", "--config", cfg, "--base-url", base)
			if l.code != exitOK || !strings.Contains(l.stdout, "runnable with this config") || !strings.Contains(l.stdout, "@"+tc.instanceLine) {
				t.Fatalf("rule: list accepts the file without edits: exit %d\n%s%s", l.code, l.stdout, l.stderr)
			}
			run := runCLI(t, "run", "--config", cfg, "--base-url", base)
			if !verdicts[run.code] || !summaryLine.MatchString(run.stdout) {
				t.Fatalf("rule: run reaches a verdict (%s): exit %d\n%s\n%s", tc.explanation, run.code, tail(run.stdout, 30), run.stderr)
			}
			// Each server is correct: never a fail; without an oracle some
			// MUSTs may lack evidence (exit 5).
			if run.code == exitFail {
				t.Errorf("rule: a correct server is never failed (%s): exit 1\n%s\n%s", tc.explanation, tail(run.stdout, 40), run.stderr)
			}
			t.Logf("%s: exit %d: %s", tc.name, run.code, strings.TrimSpace(tail(run.stdout, 5)))
		})
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestInitProbeCLI: --probe writes what it learnt; bad flags are usage
// errors (2) naming the flag, an endpoint that does not answer is 4, and
// an existing file is kept unless --force.
func TestInitProbeCLI(t *testing.T) {
	base := demotest.Serve(t, demo.Options{})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "probe.yaml")
	probe := []string{"init", "--probe", base + "/v1/charges", "--body", `{"amount":1000,"currency":"usd"}`,
		"--header", "Authorization: Bearer alice", "-o", cfg}
	r := runCLI(t, probe...)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	out, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"key_syntax: sf-string # ", "id_pointer: /id # exchanges", "replay_header: Idempotent-Replayed # exchange"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "Bearer alice") {
		t.Errorf("rule: the credential given is not written to the file\n%s", out)
	}
	t.Setenv("IDEMCHECK_TOKEN_1", "alice")
	t.Setenv("IDEMCHECK_TOKEN_2", "bob")
	if run := runCLI(t, "run", "--config", cfg); !verdicts[run.code] || run.code == exitFail {
		t.Errorf("rule: the learnt config reaches a verdict, not a fail, on the reference: exit %d\n%s\n%s", run.code, tail(run.stdout, 30), run.stderr)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{probe, exitUsage, "exists (--force overwrites it)"},
		{[]string{"init", "-o", "-"}, exitUsage, "exactly one of --openapi, --probe, --grpc, --graphql-schema and --mcp"},
		{[]string{"init", "--openapi", "x.yaml", "--body", "{}", "-o", "-"}, exitUsage, "go with --probe"},
		{[]string{"init", "--probe", base + "/v1/charges", "--operation", "x", "-o", "-"}, exitUsage, "--operation goes with --openapi"},
		{[]string{"init", "--probe", base + "/v1/charges", "--body", "nope", "-o", "-"}, exitUsage, "--body"},
		{[]string{"init", "--probe", closedPort(t) + "/v1/charges", "-o", "-"}, exitUnreachable, "target unreachable: http://127.0.0.1:"},
		{[]string{"init", "--openapi", filepath.Join(dir, "missing.yaml"), "-o", "-"}, exitUsage, "missing.yaml"},
		{[]string{"init", "--openapi", "../../examples/payments.openapi.yaml", "--operation", "nope", "-o", "-"}, exitUsage, `--operation "nope"`},
	} {
		r := runCLI(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line with %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	if r := runCLI(t, append(probe, "--force")...); r.code != exitOK {
		t.Errorf("--force: exit %d: %s", r.code, r.stderr)
	}
}

// TestInitListOracleUncommented: the list oracle init writes commented
// for the bookings document (GET /v2/bookings, elements holding the key),
// uncommented as written, counts per key: list shows it, and run against
// the bookings API reaches a verdict on that evidence, never a fail.
func TestInitListOracleUncommented(t *testing.T) {
	t.Setenv("IDEMCHECK_TOKEN_1", "key_ann")
	t.Setenv("IDEMCHECK_TOKEN_2", "key_ben")
	cfg := filepath.Join(t.TempDir(), "idemcheck.yaml")
	if r := runCLI(t, "init", "--openapi", "../../initconfig/testdata/bookings.yaml", "-o", cfg); r.code != exitOK {
		t.Fatalf("init: exit %d: %s", r.code, r.stderr)
	}
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	uncommented := 0
	for i := 0; i+2 < len(lines) && uncommented == 0; i++ {
		if lines[i] == "# oracle:" && strings.HasPrefix(lines[i+1], "#   url: ") && strings.HasPrefix(lines[i+2], "#   count: ") {
			for j := i; j <= i+2; j++ {
				lines[j] = strings.TrimPrefix(lines[j], "# ")
			}
			uncommented = 3
		}
	}
	if uncommented == 0 {
		t.Fatalf("no commented list oracle in\n%s", raw)
	}
	if err := os.WriteFile(cfg, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(bookings.New(2 * time.Second))
	defer srv.Close()
	l := runCLI(t, "list", "--config", cfg, "--base-url", srv.URL, "--run", "replay/single-execution")
	if l.code != exitOK || !strings.Contains(l.stdout, "per-key") {
		t.Fatalf("rule: the uncommented list oracle counts per key: exit %d\n%s%s", l.code, l.stdout, l.stderr)
	}
	run := runCLI(t, "run", "--config", cfg, "--base-url", srv.URL)
	if !verdicts[run.code] || run.code == exitFail {
		t.Errorf("rule: a verdict on the list oracle's evidence, not a fail on a correct API: exit %d\n%s\n%s", run.code, tail(run.stdout, 40), run.stderr)
	}
	t.Logf("exit %d: %s", run.code, strings.TrimSpace(tail(run.stdout, 5)))
}

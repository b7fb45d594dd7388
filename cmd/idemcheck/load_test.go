package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference/demo"
)

type cliRun struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, args ...string) cliRun {
	t.Helper()
	cmd := exec.Command(testenv.BuildIdemcheck(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cliRun{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestLoadCLI: exit codes and messages of `idemcheck load` against the
// reference app, one case per documented outcome.
func TestLoadCLI(t *testing.T) {
	url := demotest.Serve(t, demo.Options{})
	dir := t.TempDir()
	short := []string{"--target", url, "--mode", "mix", "--rate", "500", "--duration", "1s"}
	cases := []struct {
		name    string
		args    []string
		code    int
		stderr  string // substring the one-line error must contain
		explain string
	}{
		{"threshold-passes", append(short, "--threshold", "violations==0", "--threshold", "hit.success>0.99",
			"--json", filepath.Join(dir, "pass.json"), "--results", filepath.Join(dir, "pass.bin")),
			exitOK, "", "a met threshold and a correct server exit 0"},
		{"threshold-breached", append(short, "--threshold", "violations==0", "--threshold", "hit.p99<1ns"),
			exitThreshold, "hit.p99<1ns (value", "a breached threshold exits 3 and names itself with its value"},
		{"bad-plan", []string{"--target", url, "--plan", "100@1s 1000@zz"}, exitUsage, `"1000@zz"`,
			"an invalid plan token is named"},
		{"bad-threshold-unit", append(short, "--threshold", "hit.p99<5"), exitUsage, "latency",
			"a latency threshold without a unit is refused"},
		{"bad-threshold-syntax", append(short, "--threshold", "hit.p42<5ms"), exitUsage, `"p42"`,
			"an unknown statistic is named"},
		{"threshold-on-absent-path", []string{"--target", url, "--mode", "miss", "--threshold", "hit.p99<5ms"}, exitUsage,
			"sends no hit", "a threshold on a path the mode never sends is refused"},
		{"unreachable", []string{"--target", "http://127.0.0.1:1"}, exitUnreachable, "unreachable",
			"nothing listening fails the preflight"},
		{"bad-mode", []string{"--target", url, "--mode", "cache"}, exitUsage, `"cache"`, "an unknown mode is named"},
		{"all-5xx", []string{"--target", url, "--mode", "miss", "--rate", "100", "--duration", "500ms", "--body-patch", `{"fail":"transient"}`},
			exitFail, "miss: none of", "a run whose every answer is a 5xx fails, threshold or not"},
		{"bad-error-share", append(short, "--max-error-share", "2"), exitUsage, "--max-error-share", "the error share is a fraction"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, append([]string{"load"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("%s: exit %d (want %d), stderr %q (want it to contain %q)\nstdout:\n%s",
					tc.explain, r.code, tc.code, r.stderr, tc.stderr, r.stdout)
			}
			if tc.code == exitUsage && strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
				t.Fatalf("usage error should be one line, got %q", r.stderr)
			}
		})
	}

	t.Run("config-file", func(t *testing.T) {
		cfg := filepath.Join(dir, "api.yaml")
		yaml := "base_url: " + url + `
key_header: Idempotency-Key
key_syntax: raw
principals:
  - {name: alice, headers: {Authorization: Bearer alice}}
oracle: {url: "/v1/effects?key={key}", pointer: /executions}
operations:
  - name: refunds
    method: POST
    path: /v1/refunds
    headers: {Content-Type: application/json}
    body: {amount: 5, currency: usd}
    id_pointer: /id
`
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "config.json")
		r := runCLI(t, "load", "--config", cfg, "--operation", "refunds", "--mode", "hit", "--pool", "10",
			"--rate", "200", "--duration", "500ms", "--json", out, "--threshold", "violations==0")
		if r.code != exitOK {
			t.Fatalf("exit %d: %s\n%s", r.code, r.stderr, r.stdout)
		}
		doc := readJSON(t, out)
		hit := doc["paths"].(map[string]any)["hit"].(map[string]any)
		if hit["requests"].(float64) < 50 || doc["oracle"].(map[string]any)["keys_probed"].(float64) != 10 {
			t.Fatalf("hit %v oracle %v", hit["requests"], doc["oracle"])
		}
	})
	t.Run("config-ttl", func(t *testing.T) {
		// Keys that live 500ms, a 1.5s hit run: replays after expiry are
		// fresh executions, legal under the config's ttl.
		short := demotest.Serve(t, demo.Options{TTL: 500 * time.Millisecond})
		cfg := filepath.Join(dir, "ttl.yaml")
		yaml := "base_url: " + short + `
ttl: 500ms
principals: [{name: alice, headers: {Authorization: Bearer alice}}]
operations: [{name: charges, method: POST, path: /v1/charges, headers: {Content-Type: application/json}, body: {amount: 5, currency: usd}, id_pointer: /id}]
`
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		// Every hit is sent past TTL − margin (500ms − 500ms): none is
		// judged, and the run says so and exits 5 (before: "violations: 0"
		// and exit 0, with every hit unchecked).
		out := filepath.Join(dir, "ttl.json")
		r := runCLI(t, "load", "--config", cfg, "--mode", "hit", "--pool", "5", "--rate", "100", "--duration", "1500ms", "--json", out)
		doc := readJSON(t, out)
		notJudged, _ := doc["not_judged"].(map[string]any)
		if r.code != exitIncomplete || doc["violations"] != 0.0 || doc["after_ttl"].(float64) == 0 || doc["ttl_s"] != 0.5 ||
			notJudged["sent after its key may have expired"] == nil || !strings.Contains(r.stdout, "violations: 0 violations of 0 answers judged; ") ||
			!strings.Contains(r.stderr, "not judged") {
			t.Fatalf("exit %d (want %d), violations %v, after_ttl %v, ttl_s %v, not judged %v: %s\n%s", r.code, exitIncomplete,
				doc["violations"], doc["after_ttl"], doc["ttl_s"], doc["not_judged"], r.stderr, r.stdout)
		}
		r = runCLI(t, "load", "--config", cfg, "--mode", "hit", "--pool", "5", "--rate", "100", "--duration", "500ms", "--allow-incomplete")
		if r.code != exitOK {
			t.Fatalf("--allow-incomplete: exit %d: %s\n%s", r.code, r.stderr, r.stdout)
		}
	})
	t.Run("json-schema", func(t *testing.T) {
		doc := readJSON(t, filepath.Join(dir, "pass.json"))
		if doc["schema"] != "idemcheck.load/v1" || doc["violations"] != 0.0 {
			t.Fatalf("schema %v violations %v", doc["schema"], doc["violations"])
		}
		paths := doc["paths"].(map[string]any)
		for _, p := range []string{"hit", "miss"} {
			lat := paths[p].(map[string]any)["latency_ms"].(map[string]any)
			if lat["p50"] == nil || lat["p99"] == nil || lat["p50"].(float64) <= 0 {
				t.Fatalf("%s latency %v", p, lat)
			}
		}
	})
	t.Run("report-merges-results", func(t *testing.T) {
		bin := filepath.Join(dir, "pass.bin")
		r := runCLI(t, "load", "report", bin, bin, "--json", filepath.Join(dir, "merged.json"), "--threshold", "violations==0")
		if r.code != exitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		one := readJSON(t, filepath.Join(dir, "pass.json"))["paths"].(map[string]any)["hit"].(map[string]any)["requests"].(float64)
		two := readJSON(t, filepath.Join(dir, "merged.json"))["paths"].(map[string]any)["hit"].(map[string]any)["requests"].(float64)
		if two != 2*one {
			t.Fatalf("merged hit requests %v, want 2 x %v", two, one)
		}
	})
}

// TestLoadCLIDefect: contention against a server without an in-flight lock
// reports violations and exits 1 (exactly-once failure).
func TestLoadCLIDefect(t *testing.T) {
	url := demotest.Serve(t, demo.Options{Defects: []string{"no-inflight-lock"}})
	out := filepath.Join(t.TempDir(), "defect.json")
	r := runCLI(t, "load", "--target", url, "--mode", "contention", "--rate", "300", "--duration", "1s",
		"--body-patch", `{"delay_ms":200}`, "--json", out)
	doc := readJSON(t, out)
	if r.code != exitFail || doc["violations"].(float64) == 0 {
		t.Fatalf("exit %d, violations %v: %s\n%s", r.code, doc["violations"], r.stderr, r.stdout)
	}
}

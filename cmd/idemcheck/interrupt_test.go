package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// interruptCLI runs the binary, sends SIGINT after the given time and
// waits (bounded) for it to stop.
func interruptCLI(t *testing.T, after time.Duration, args ...string) cliRun {
	t.Helper()
	cmd := exec.Command(testenv.BuildIdemcheck(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		t.Fatalf("%v ended before the interruption: exit %d\n%s%s", args, cmd.ProcessState.ExitCode(), out.String(), errb.String())
	case <-time.After(after):
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not stop within 60s of SIGINT", args)
	}
	return cliRun{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// TestInterrupt: SIGINT in run, chaos and load against a correct server:
// sending stops, nothing cut short is judged (no false violation), every
// report says interrupted, exit 130.
func TestInterrupt(t *testing.T) {
	good := demotest.Serve(t, demo.Options{TTL: 3 * time.Second})
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		name, rule string
		args       []string
		after      time.Duration
		check      func(t *testing.T, r cliRun)
	}{
		{"run", "cases cut short are interrupted, not failed; JSON, JUnit and Markdown say interrupted",
			[]string{"run", "--target", good, "--ttl", "3s", "--json", file("run.json"), "--junit", file("run.xml"), "--markdown", file("run.md")},
			time.Second, func(t *testing.T, r cliRun) {
				doc := readJSON(t, file("run.json"))
				if doc["interrupted"] != true || doc["outcome"] != "interrupted" || doc["exit_code"] != 130.0 {
					t.Errorf("JSON: interrupted %v outcome %v exit_code %v", doc["interrupted"], doc["outcome"], doc["exit_code"])
				}
				cut := 0
				for _, res := range doc["results"].([]any) {
					res := res.(map[string]any)
					switch res["status"] {
					case "fail", "warn", "inconclusive":
						t.Errorf("a correct server: %s %s: %s", res["name"], res["status"], res["reason"])
					case "interrupted":
						cut++
					}
				}
				if cut == 0 {
					t.Errorf("no instance says interrupted")
				}
				if b, _ := os.ReadFile(file("run.xml")); !bytes.Contains(b, []byte(`<property name="interrupted" value="true">`)) {
					t.Errorf("JUnit does not say interrupted")
				}
				if b, _ := os.ReadFile(file("run.md")); !bytes.Contains(b, []byte("interrupted (exit 130)")) {
					t.Errorf("Markdown does not say interrupted:\n%s", b)
				}
				if !strings.Contains(r.stdout, "outcome: interrupted (exit 130)") {
					t.Errorf("console does not say interrupted:\n%s", r.stdout)
				}
			}},
		{"chaos", "ops cut short are interrupted, not lost; the JSON says interrupted",
			[]string{"chaos", "--target", good, "--ttl", "3s", "--ops", "100000", "--concurrency", "8", "--fault", "drop-response:0.3", "--json", file("chaos.json")},
			1500 * time.Millisecond, func(t *testing.T, r cliRun) {
				var doc struct {
					Interrupted bool  `json:"interrupted"`
					Cut         int   `json:"interrupted_ops"`
					Violations  []any `json:"violations"`
					Ops         int   `json:"ops"`
				}
				b, err := os.ReadFile(file("chaos.json"))
				if err != nil || json.Unmarshal(b, &doc) != nil {
					t.Fatalf("chaos JSON: %v\n%s", err, b)
				}
				if !doc.Interrupted || len(doc.Violations) != 0 || doc.Ops == 0 || doc.Ops >= 100000 {
					t.Errorf("interrupted %t, %d ops, violations %v: want interrupted, some ops, none", doc.Interrupted, doc.Ops, doc.Violations)
				}
				if !strings.Contains(r.stdout, "interrupted: ") || !strings.Contains(r.stdout, "exactly-once: OK") {
					t.Errorf("stdout:\n%s", r.stdout)
				}
			}},
		{"load", "the attack stops, the partial report is written and says interrupted",
			[]string{"load", "--target", good, "--mode", "mix", "--rate", "200", "--duration", "60s", "--json", file("load.json")},
			1500 * time.Millisecond, func(t *testing.T, r cliRun) {
				doc := readJSON(t, file("load.json"))
				hit := doc["paths"].(map[string]any)["hit"].(map[string]any)["requests"].(float64)
				if doc["interrupted"] != true || hit == 0 || hit >= 200*60 || doc["violations"] != 0.0 || len(doc["failures"].([]any)) != 0 {
					t.Errorf("interrupted %v, hit requests %v, violations %v, failures %v", doc["interrupted"], hit, doc["violations"], doc["failures"])
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := interruptCLI(t, tc.after, tc.args...)
			if r.code != exitInterrupted {
				t.Fatalf("rule: %s: exit %d, want 130\nstdout:\n%s\nstderr:\n%s", tc.rule, r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "interrupted") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("rule: one stderr line says interrupted: %q", r.stderr)
			}
			tc.check(t, r)
		})
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// The client face end to end: the reference client exits 0 under
// --strict, its reports and badge say it is a certified client and its
// attestation verifies as one; its fresh-key-per-retry defect exits 1
// naming the case; a command that cannot start or never calls, and wrong
// flags, give exit 2 or 4 in one line.
func TestClientFace(t *testing.T) {
	bin, dir := testenv.BuildIdemcheck(t), t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	outputs := []string{"--json", file("c.json"), "--junit", file("c.xml"), "--markdown", file("c.md"), "--html", file("c.html"),
		"--badge", file("badge.json"), "--attest", file("att.json"), "--subject", "sdk=sha256:" + strings.Repeat("cd", 32)}
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		says  string
		check func(t *testing.T, r cliRun)
	}{
		{"correct", append(append([]string{"client", "--strict"}, outputs...), "--", bin, "refclient"), 0, "", func(t *testing.T, r cliRun) {
			for name, want := range map[string]string{
				"c.json": `"level": "draft-07 client"`, "c.xml": `<testsuites name="idemcheck client certification"`,
				"c.md": "## idemcheck client certification: ✅ pass", "c.html": "<title>idemcheck client certification: pass",
				"badge.json": `"label":"Idempotency-Key client","message":"draft-07 client · `,
			} {
				if b, err := os.ReadFile(file(name)); err != nil || !strings.Contains(string(b), want) {
					t.Errorf("%s does not say %q: %v\n%s", name, want, err, b)
				}
			}
			if !strings.HasPrefix(r.stdout, "idemcheck client certification: "+bin+" refclient against the stand-in") || !strings.Contains(r.stdout, "conformance: draft-07 client\n") {
				t.Errorf("console:\n%s", r.stdout)
			}
			// The reference client exits 1 after the 422, as a correct client may: not blamed.
			for _, res := range readJSON(t, file("c.json"))["results"].([]any) {
				res := res.(map[string]any)
				if res["id"] == "no-resend/after-422" && (res["status"] != "pass" || !strings.Contains(res["observed"].(string), "the client exited 1")) {
					t.Errorf("no-resend/after-422: %v: %v", res["status"], res["observed"])
				}
			}
			if v := runCLI(t, "verify", file("att.json"), "--report", file("c.json")); v.code != 0 || !strings.Contains(v.stdout, "consistent: a client certification, level draft-07 client") {
				t.Errorf("verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
			}
		}},
		{"fresh-key-per-retry", []string{"client", "--strict", "--", bin, "refclient", "--defect", "fresh-key-per-retry"}, 1, "retry/lost-answer: fail", func(t *testing.T, r cliRun) {
			if !strings.Contains(r.stdout, "conformance: not conformant: IK-CLIENT-5") {
				t.Errorf("console does not say not conformant: IK-CLIENT-5:\n%s", r.stdout)
			}
		}},
		{"no-such-command", []string{"client", "--", "/no/such/client"}, 2, "cannot start", nil},
		{"never-calls", []string{"client", "--", "true"}, 4, "without calling the stand-in", nil},
		{"wrong-path", []string{"client", "--", "sh", "-c", `curl -s -X POST "$IDEMCHECK_BASE_URL/v2/nothing"`}, 4, "no operation of the stand-in's config", nil},
		{"no-command", []string{"client"}, 2, "give the client command after --", nil},
		{"unknown-flag", []string{"client", "--retries", "3", "--", "true"}, 2, "unknown flag: --retries", nil},
		{"bad-glob", []string{"client", "--run", "retry/[", "--", "true"}, 2, `--run "retry/[": not a valid glob`, nil},
		{"hold-not-positive", []string{"client", "--hold", "-1s", "--", "true"}, 2, "--hold -1s: must be positive", nil},
		{"hold-past-bound", []string{"client", "--hold", "10s", "--case-timeout", "5s", "--", "true"}, 2, "--hold 10s: must be shorter than --case-timeout 5s", nil},
		{"bad-subject", []string{"client", "--attest", file("x.json"), "--subject", "sdk", "--", "true"}, 2, `--subject "sdk": want NAME=sha256:HEX`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			code, out, stderr := r.code, r.stdout, r.stderr
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, stderr)
			}
			if tc.says != "" && !strings.Contains(stderr, tc.says) {
				t.Errorf("stderr %q does not say %q", stderr, tc.says)
			}
			if tc.code >= 2 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("a setup error is one line; stderr:\n%s", stderr)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// The harnesses of docs/clients.md (shell + curl, Python, Node, Java)
// each pass the whole catalog under --strict; one whose interpreter is
// missing skips.
func TestClientHarnesses(t *testing.T) {
	for _, tc := range []struct {
		name, tool string
		args       func(t *testing.T) []string
	}{
		{"curl", "curl", func(*testing.T) []string { return []string{"sh", "../../examples/clients/curl.sh"} }},
		{"python", "python3", func(*testing.T) []string { return []string{"python3", "../../examples/clients/harness.py"} }},
		{"node", "node", func(*testing.T) []string { return []string{"node", "../../examples/clients/harness.mjs"} }},
		{"java", "javac", func(t *testing.T) []string {
			dir := t.TempDir()
			if out, err := exec.Command("javac", "-d", dir, "../../examples/clients/Harness.java").CombinedOutput(); err != nil {
				t.Fatalf("javac: %v\n%s", err, out)
			}
			return []string{"java", "-cp", dir, "Harness"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath(tc.tool); err != nil {
				t.Skipf("no %s", tc.tool)
			}
			t.Parallel()
			r := runCLI(t, append([]string{"client", "--strict", "--"}, tc.args(t)...)...)
			code, out, stderr := r.code, r.stdout, r.stderr
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
			}
		})
	}
}

// A client run's attestation verifies against its report, and a level
// edited into it is caught.
func TestClientAttestVerify(t *testing.T) {
	bin, dir := testenv.BuildIdemcheck(t), t.TempDir()
	att, rep := filepath.Join(dir, "att.json"), filepath.Join(dir, "report.json")
	if r := runCLI(t, "client", "--json", rep, "--attest", att, "--subject", "sdk=sha256:"+strings.Repeat("ab", 32),
		"--run", "retry/lost-answer", "--", bin, "refclient", "--defect", "fresh-key-per-retry"); r.code != 1 {
		t.Fatalf("client: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "verify", att, "--report", rep); r.code != 0 {
		t.Fatalf("verify: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	raw, err := os.ReadFile(att)
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(raw), `"level": "not conformant"`, `"level": "draft-07 client"`, 1)
	if forged == string(raw) {
		t.Fatalf("no level not conformant in the attestation:\n%s", raw)
	}
	if err := os.WriteFile(att, []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "verify", att); r.code != 1 || !strings.Contains(r.stdout+r.stderr, "retry/lost-answer") {
		t.Fatalf("verify of a forged level: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// liveInGroup lists the processes of process group pgid that are not yet
// dead (zombies are), from /proc.
func liveInGroup(t *testing.T, pgid string) []string {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var live []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split after it.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 2 && f[2] == pgid && f[0] != "Z" {
			live = append(live, strings.TrimSpace(s[:strings.LastIndexByte(s, ')')+1]))
		}
	}
	return live
}

// noneLeft waits (bounded) for the client's process group, named in file,
// to have no live process.
func noneLeft(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the client did not record its process group: %v", err)
	}
	pgid := strings.TrimSpace(string(b))
	deadline := time.Now().Add(5 * time.Second)
	for {
		live := liveInGroup(t, pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client's process group %s still has %v", pgid, live)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SIGINT mid-run stops the client's whole process group (the command and
// what it started) and exits 130 in one line, promptly; a client that
// exits leaving a process running in its group has it killed, and its
// run does not wait for it.
func TestClientProcessGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	testenv.BuildIdemcheck(t) // before the clocks start
	dir := t.TempDir()
	t.Run("interrupted", func(t *testing.T) {
		pgid := filepath.Join(dir, "interrupted")
		script := "echo $$ > " + pgid + `; curl -s -o /dev/null -X POST "$IDEMCHECK_BASE_URL/v1/charges" -H 'Idempotency-Key: "k-'"$$"'"'; sleep 300 & sleep 300`
		const after = 1500 * time.Millisecond
		start := time.Now()
		r := interruptCLI(t, after, "client", "--run", "key/present", "--", "sh", "-c", script)
		if took := time.Since(start) - after; took > 10*time.Second {
			t.Errorf("stopped %s after SIGINT: want promptly", took.Round(time.Millisecond))
		}
		if r.code != exitInterrupted || !strings.Contains(r.stderr, "interrupted") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("exit %d, stderr %q: want 130 and one line saying interrupted", r.code, r.stderr)
		}
		noneLeft(t, pgid)
	})
	t.Run("exit-leaves-a-child", func(t *testing.T) {
		pgid := filepath.Join(dir, "exited")
		start := time.Now()
		r := runCLI(t, "client", "--run", "key/present", "--", "sh", "-c", "sleep 300 & echo $$ > "+pgid+"; exec sh ../../examples/clients/curl.sh")
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("the run took %s: it waited for the child left running", took.Round(time.Millisecond))
		}
		noneLeft(t, pgid)
	})
}

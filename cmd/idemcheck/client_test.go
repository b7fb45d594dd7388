package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// The client face end to end: the reference client exits 0 under
// --strict, its fresh-key-per-retry defect exits 1 naming the case, and a
// command that cannot start or never calls gives exit 2 or 4 in one line.
func TestClientFace(t *testing.T) {
	bin := testenv.BuildIdemcheck(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"correct", []string{"client", "--strict", "--", bin, "refclient"}, 0, ""},
		{"fresh-key-per-retry", []string{"client", "--strict", "--run", "retry/lost-answer", "--", bin, "refclient", "--defect", "fresh-key-per-retry"}, 1, "retry/lost-answer: fail"},
		{"no-such-command", []string{"client", "--", "/no/such/client"}, 2, "cannot start"},
		{"never-calls", []string{"client", "--", "true"}, 4, "without calling the stand-in"},
		{"wrong-path", []string{"client", "--", "sh", "-c", `curl -s -X POST "$IDEMCHECK_BASE_URL/v2/nothing"`}, 4, "no operation of the stand-in's config"},
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

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// TestMain stops the PostgreSQL server the lease test may have started.
func TestMain(m *testing.M) { testenv.Main(m) }

// runResult is one case result of a JSON report.
type runResult struct {
	ID, Operation, Status, Observed, Reason string
}

// runReport runs `idemcheck run args...` and returns its JSON report's
// results (none when the run wrote no report).
func runReport(t *testing.T, args ...string) (cliRun, []runResult) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.json")
	res := runCLI(t, append(append([]string{"run"}, args...), "--json", path)...)
	var rep struct{ Results []runResult }
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatalf("report: %v", err)
		}
	}
	return res, rep.Results
}

// serveCmd is the --target-cmd that starts `idemcheck serve` with a 1 s
// lease on the harness's port.
func serveCmd(t *testing.T, args ...string) string {
	return strings.Join(append([]string{testenv.BuildIdemcheck(t), "serve", "--addr", "127.0.0.1:{port}", "--lease", "1s"}, args...), " ")
}

// TestLeaseCrashRecovers runs lease/crash-recovers (IK-LEASE-1) against a
// managed `idemcheck serve` that the harness SIGKILLs mid-flight and
// restarts, over HTTP (--target-cmd) and over gRPC (target_cmd serving
// --grpc on {port}, ready once a gRPC server answers): a durable store
// blocks the key until the dead request's lease ends (409; ABORTED) and
// then lets the retry complete; a store that forgets the record is legal;
// a lease that never expires is caught.
func TestLeaseCrashRecovers(t *testing.T) {
	dsn := testenv.RequirePostgres(t)
	rows := []struct {
		name, explain string
		serve         []string
		code          int
		status        string
		observed      map[string]string // by carrier
	}{
		{"postgres", "the in-flight record survives the kill; retries are refused in flight until the 1 s lease ends, then one completes",
			[]string{"--store", "postgres", "--dsn", dsn}, exitOK, "pass", map[string]string{"http": " 409", "grpc": "ABORTED"}},
		{"memory", "the record dies with the process: the key is fresh at once, which LEASE-1 allows",
			[]string{"--store", "memory"}, exitOK, "pass", map[string]string{"http": "lost the in-flight record", "grpc": "lost the in-flight record"}},
		{"lease-never-expires", "the dead request's record blocks the key past lease + grace (a SHOULD: fails under --strict)",
			[]string{"--store", "postgres", "--dsn", dsn, "--defect", "lease-never-expires"}, exitFail, "warn",
			map[string]string{"http": "still not completed past lease + grace", "grpc": "still not completed past lease + grace"}},
	}
	for _, carrier := range []string{"http", "grpc"} {
		for _, row := range rows {
			t.Run(carrier+"/"+row.name, func(t *testing.T) {
				args := []string{"--target-cmd", serveCmd(t, row.serve...), "--lease", "1s", "--run", "lease/crash-recovers@charges"}
				if carrier == "grpc" {
					args = []string{"--config", grpcManagedConfig(t, testenv.FreeAddr(t), row.serve...), "--run", "lease/crash-recovers@payments"}
				}
				res, results := runReport(t, append(args, "--strict")...)
				if res.code != row.code {
					t.Fatalf("%s: exit %d, want %d; stderr: %s", row.explain, res.code, row.code, res.stderr)
				}
				if len(results) != 1 {
					t.Fatalf("%s: %d results, want 1: %+v", row.explain, len(results), results)
				}
				r := results[0]
				if r.Status != row.status || !strings.Contains(r.Observed, row.observed[carrier]) {
					t.Fatalf("%s: %s %q %s, want %s with %q", row.explain, r.Status, r.Observed, r.Reason, row.status, row.observed[carrier])
				}
				t.Logf("%s: %s", r.Status, r.Observed)
			})
		}
	}
}

// TestTargetCmdErrors: a --target-cmd that cannot start is a usage error
// (2); one that starts but never answers HTTP is an unreachable target
// (4). Either way one line naming the command, and no case runs.
func TestTargetCmdErrors(t *testing.T) {
	rows := []struct {
		name, explain string
		cmd           string
		code          int
		want          string
	}{
		{"unterminated-quote", "a command line that does not split is named with the flag", `serve 'oops`, exitUsage, `--target-cmd "serve 'oops": unterminated single quote`},
		{"not-found", "a program that does not exist is named", "/nonexistent/idemcheck-server --port {port}", exitUsage, "/nonexistent/idemcheck-server"},
		{"exits-at-once", "a program that exits before answering says so, with its exit status", serveCmd(t, "--store", "bogus"), exitUnreachable, "exited before answering"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			res, results := runReport(t, "--target-cmd", row.cmd, "--lease", "1s")
			msg := strings.TrimSpace(res.stderr)
			if res.code != row.code || !strings.Contains(msg, row.want) || strings.Contains(msg, "\n") {
				t.Fatalf("%s: exit %d, stderr %q; want exit %d and one line containing %q", row.explain, res.code, msg, row.code, row.want)
			}
			if len(results) != 0 {
				t.Fatalf("%s: cases ran: %+v", row.explain, results)
			}
		})
	}
}

// TestLeaseCrashNeedsTargetCmd: the plan marks the crash case as lacking
// target-cmd without one, and as supplied with one (list starts nothing).
func TestLeaseCrashNeedsTargetCmd(t *testing.T) {
	rows := []struct {
		args []string
		want string
	}{
		{nil, "lacks target-cmd"},
		{[]string{"--target-cmd", serveCmd(t)}, "supplied"},
	}
	for _, row := range rows {
		res := runCLI(t, append([]string{"list", "--lease", "1s", "--run", "lease/crash-recovers@charges"}, row.args...)...)
		if res.code != exitOK || !strings.Contains(res.stdout, row.want) {
			t.Errorf("list %v: exit %d, %s%s; want %q", row.args, res.code, res.stdout, res.stderr, row.want)
		}
	}
}

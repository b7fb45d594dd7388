package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// serviceTTL is the retention the service is started with; both configs
// declare it.
const serviceTTL = 4 * time.Second

// The principals' API keys, as the configs read them (${ALICE_API_KEY}).
var apiKeys = map[string]string{"ALICE_API_KEY": "sk_test_alice", "BOB_API_KEY": "sk_test_bob"}

var (
	buildOnce sync.Once
	shopBin   string
	buildErr  error
)

// binary builds grpcshop once per test binary.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "grpcshop-bin-")
		if err != nil {
			buildErr = err
			return
		}
		shopBin = filepath.Join(dir, "grpcshop")
		if out, err := exec.Command("go", "build", "-o", shopBin, ".").CombinedOutput(); err != nil {
			buildErr = errors.New("go build: " + err.Error() + ": " + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return shopBin
}

// listening is the service's start-up line (log/slog's default output).
var listening = regexp.MustCompile(`grpcshop: listening addr=(\S+)`)

// startService runs build d of grpcshop on 127.0.0.1:0 against the
// database dsn and the provider at providerURL, and returns its address
// once it listens. It is killed when the test ends.
func startService(t *testing.T, dsn, providerURL string, d defect) string {
	t.Helper()
	cmd := exec.Command(binary(t), "-addr", "127.0.0.1:0", "-provider-url", providerURL, "-ttl", serviceTTL.String())
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn, "GRPCSHOP_DEFECT="+string(d),
		"GRPCSHOP_API_KEYS=sk_test_alice=alice,sk_test_bob=bob")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	done := make(chan struct{})
	var tail []string
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			} else if len(tail) < 20 {
				tail = append(tail, sc.Text())
			}
		}
		_ = cmd.Wait() // after stderr is read to its end
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	select {
	case addr := <-found:
		return addr
	case <-done:
		t.Fatalf("grpcshop exited before listening: %s", strings.Join(tail, "\n"))
	case <-time.After(30 * time.Second):
		t.Fatal("grpcshop did not listen within 30s")
	}
	return ""
}

// report is what the tests read of idemcheck's JSON report
// (idemcheck.report/v1).
type report struct {
	Outcome      string   `json:"outcome"`
	ExitCode     int      `json:"exit_code"`
	Notes        []string `json:"notes"`
	Results      []result `json:"results"`
	Requirements map[string]struct {
		Verified  int `json:"verified"`
		NotTested int `json:"not_tested"`
	} `json:"requirements"`
	Conformance struct {
		Level string `json:"level"`
	} `json:"conformance"`
	UntestedMust []struct {
		Instance string `json:"instance"`
		Reason   string `json:"reason"`
	} `json:"untested_must"`
}

// result is one case instance's verdict.
type result struct {
	Name       string     `json:"name"`
	ID         string     `json:"id"`
	Level      string     `json:"level"`
	Status     string     `json:"status"`
	Observed   string     `json:"observed"`
	Reason     string     `json:"reason"`
	Downstream []string   `json:"downstream"`
	Exchanges  []exchange `json:"exchanges"`
}

type exchange struct {
	Label    string `json:"label"`
	Response *struct {
		Body string `json:"body"`
	} `json:"response"`
}

// result is the verdict of instance name (case@operation, or its case
// ID), nil when it did not run.
func (rep *report) result(name string) *result {
	for i, r := range rep.Results {
		if r.Name == name || r.ID == name {
			return &rep.Results[i]
		}
	}
	return nil
}

// check runs `idemcheck run` with config (one of the checked-in files,
// edited by edit) against build d of a fresh service on a fresh schema,
// with args added, and returns its exit code and JSON report.
func check(t *testing.T, config string, d defect, edit func(cfg map[string]any, dsn string), args ...string) (int, *report) {
	t.Helper()
	dsn := testenv.RequirePostgres(t)
	listen := testenv.FreeAddr(t)
	addr := startService(t, dsn, "http://"+listen, d)
	cfg := writeConfig(t, config, func(c map[string]any) {
		c["base_url"] = "grpc://" + addr
		c["downstream"].(map[string]any)["listen"] = listen
		if edit != nil {
			edit(c, dsn)
		}
	})
	out := filepath.Join(t.TempDir(), "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.BuildIdemcheck(t), append([]string{"run", "--config", cfg, "--json", out}, args...)...)
	cmd.Env = os.Environ()
	for k, v := range apiKeys {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	text, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("exit %d, no JSON report: %v\n%s", code, err, text)
	}
	var rep report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.ExitCode != code {
		t.Errorf("the report says exit %d, the process exited %d", rep.ExitCode, code)
	}
	for _, n := range rep.Notes {
		t.Logf("note: %s", n)
	}
	return code, &rep
}

// writeConfig writes the checked-in config name, changed by edit, to a
// temp file.
func writeConfig(t *testing.T, name string, edit func(map[string]any)) string {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// notRun are the reasons a MUST may skip on the correct build: what
// neither config supplies (events, replicas — TestReplicas runs two —, a
// managed process or a lease; each such requirement is verified by
// another instance or opt-in, as the requirements check below holds),
// and a requirement that does not apply: missing/repeat-fails-again judges
// a required key (both of grpcshop's keys are optional, as AIP-155 and
// AEP-155 let them be), and a requirement with no gRPC form.
var notRun = []string{"config does not supply: ", "does not apply"}

// TestCorrectBuild: idemcheck run exits 0 on the correct build, for each
// method's config and with the SQL oracle in place of the double's count:
// every MUST that runs passes, nothing fails, warns or stays undecided
// (the profile's findings are skips).
func TestCorrectBuild(t *testing.T) {
	sqlOracle := func(c map[string]any, dsn string) {
		c["oracle"] = map[string]any{"sql": map[string]any{"dsn": dsn, "query": "select count(*) from provider_calls where request_key = $1"}}
	}
	for _, tc := range []struct {
		name, config string
		edit         func(map[string]any, string)
		args         []string
	}{
		{"aip-155", "idemcheck.yaml", nil, nil},
		{"aep-155", "idemcheck-aep.yaml", nil, nil},
		// The executions as the service's own table records them: the
		// families that count them.
		{"aip-155 sql oracle", "idemcheck.yaml", sqlOracle, []string{"--run", "{replay,concurrent,lost,mismatch,scope,errors}/**"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, rep := check(t, tc.config, "", tc.edit, tc.args...)
			if code != 0 || rep.Outcome != "pass" {
				t.Errorf("exit %d, outcome %s; want 0, pass", code, rep.Outcome)
			}
			passed := 0
			for _, r := range rep.Results {
				switch {
				case r.Status == "pass":
					if r.Level == "MUST" {
						passed++
					}
				case r.Status == "skip" && r.Level == "MUST":
					if !slices.ContainsFunc(notRun, func(why string) bool { return strings.HasPrefix(r.Reason, why) }) {
						t.Errorf("MUST %s skipped: %s", r.Name, r.Reason)
					}
				case r.Status != "skip":
					t.Errorf("%s (%s): %s: %s %s", r.Name, r.Level, r.Status, r.Observed, r.Reason)
				}
			}
			if passed < 8 {
				t.Errorf("%d MUST instances passed; the catalog over gRPC has at least 8 that run here", passed)
			}
			if tc.edit != nil {
				return
			}
			// Every MUST requirement of the catalog over gRPC verified: the
			// level the preset names, none left untested (the opt-in ones,
			// the outbox without events:, are counted apart).
			if m := rep.Requirements["MUST"]; m.NotTested != 0 || !strings.HasSuffix(rep.Conformance.Level, " compatible") {
				t.Errorf("MUST requirements: %+v, level %q, untested %+v; want none untested and the preset's level", m, rep.Conformance.Level, rep.UntestedMust)
			}
			// An empty key field is no key, which an optional key allows:
			// not an invalid key to refuse.
			if r := rep.result("syntax/empty-key"); r == nil || r.Status != "skip" || !strings.HasPrefix(r.Reason, "does not apply") {
				t.Errorf("syntax/empty-key: %+v, want a skip saying it does not apply", r)
			}
			// The timeout variant (the provider never answers) is judged.
			if r := rep.result("crash/handler-timeout"); r == nil || r.Status != "pass" {
				t.Errorf("crash/handler-timeout: %+v, want a pass", r)
			}
			// The decline's google.rpc.ErrorInfo reaches the report: the
			// idemcheck binary decodes AIP-193's error details.
			if r := rep.result("errors/business-error-kept"); r == nil || !slices.ContainsFunc(r.Exchanges, func(x exchange) bool {
				return x.Response != nil && strings.Contains(x.Response.Body, `"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"`)
			}) {
				t.Errorf("errors/business-error-kept: no ErrorInfo in its exchanges")
			}
		})
	}
}

// TestDefects: each broken build makes idemcheck run exit 1, failing the
// cases named for it (run alone: --run keeps the test short; the whole
// catalog fails them too), each verdict showing the provider calls behind
// it.
func TestDefects(t *testing.T) {
	for _, tc := range []struct {
		defect defect
		config string
		// want are the instances that must end so, and the --run globs.
		want map[string]string
	}{
		// A retry after another key's request completed gets that one's
		// order. (Run alone, mismatch/changed-body fails it too: a changed
		// request under a used key is answered from the cache, a replay.)
		{replaysOtherResponse, "idemcheck.yaml", map[string]string{"replay/single-execution@orders": "fail"}},
		{partialDigest, "idemcheck.yaml", map[string]string{"mismatch/changed-body@orders": "fail"}},
		{executeOnMismatch, "idemcheck.yaml", map[string]string{"mismatch/changed-body@orders": "fail", "mismatch/original-survives@orders": "fail"}},
		{checkThenInsert, "idemcheck.yaml", map[string]string{"concurrent/same-key-burst@orders": "fail"}},
		{leaseLapses, "idemcheck.yaml", map[string]string{"concurrent/in-flight-offsets@orders": "fail", "lost/retry-storm@orders": "fail"}},
		{noCallerScope, "idemcheck.yaml", map[string]string{
			"scope/other-user-isolated@orders": "fail", "scope/other-user-in-flight@orders": "fail", "security/cross-principal-guess@orders": "fail"}},
		// AEP-155: "API servers must reject requests with expired keys, and
		// must reject requests with keys that are in the future" — a MUST
		// for a target whose key is AEP-155's {key, first_sent}.
		{firstSentIgnored, "idemcheck-aep.yaml", map[string]string{"syntax/first-sent-expired@refunds": "fail", "syntax/first-sent-future@refunds": "fail"}},
	} {
		t.Run(string(tc.defect), func(t *testing.T) {
			var args []string
			for name := range tc.want {
				args = append(args, "--run", name)
			}
			code, rep := check(t, tc.config, tc.defect, nil, args...)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for name, want := range tc.want {
				r := rep.result(name)
				switch {
				case r == nil:
					t.Errorf("%s: did not run", name)
				case r.Status != want:
					t.Errorf("%s: %s, want %s: %s %s", name, r.Status, want, r.Observed, r.Reason)
				case !slices.ContainsFunc(r.Downstream, func(l string) bool { return strings.HasPrefix(l, "downstream ") }):
					t.Errorf("%s: no provider calls in its evidence", name)
				}
			}
		})
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	Outcome  string   `json:"outcome"`
	ExitCode int      `json:"exit_code"`
	Notes    []string `json:"notes"`
	Results  []struct {
		Name       string   `json:"name"`
		ID         string   `json:"id"`
		Level      string   `json:"level"`
		Status     string   `json:"status"`
		Observed   string   `json:"observed"`
		Reason     string   `json:"reason"`
		Missing    []string `json:"missing"`
		Downstream []string `json:"downstream"`
	} `json:"results"`
}

// check runs `idemcheck run` with config (one of the checked-in files,
// edited by edit) against build d of a fresh service on a fresh schema,
// with args added, and returns its exit code and JSON report.
func check(t *testing.T, config string, d defect, edit func(cfg map[string]any, dsn string), args ...string) (int, *report) {
	t.Helper()
	dsn := testenv.RequirePostgres(t)
	listen := freeAddr(t)
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

// freeAddr is a loopback address free a moment ago, for the double: the
// service must know its provider's URL before idemcheck starts the double.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestExplore runs the whole catalog on the correct build and logs it.
func TestExplore(t *testing.T) {
	for _, config := range []string{"idemcheck.yaml", "idemcheck-aep.yaml"} {
		t.Run(config, func(t *testing.T) {
			code, rep := check(t, config, "", nil)
			t.Logf("exit %d outcome %s", code, rep.Outcome)
			for _, r := range rep.Results {
				if r.Status != "skip" || !strings.Contains(r.Reason, "gRPC") {
					t.Logf("%s %s %s: %s | %s | %v", r.Status, r.Level, r.Name, r.Observed, r.Reason, r.Downstream)
				}
			}
		})
	}
}

package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// RunReport is what a test reads of `idemcheck run`'s JSON report.
type RunReport struct {
	Outcome  string      `json:"outcome"`
	ExitCode int         `json:"exit_code"`
	Results  []RunResult `json:"results"`
}

// RunResult is one case instance's verdict.
type RunResult struct {
	Name     string `json:"name"`
	ID       string `json:"id"`
	Level    string `json:"level"`
	Status   string `json:"status"`
	Observed string `json:"observed"`
	Reason   string `json:"reason"`
}

// Failing are the instances whose verdict fails a --strict run (fail,
// warn), with their statuses.
func (r *RunReport) Failing() map[string]string {
	out := map[string]string{}
	for _, res := range r.Results {
		if res.Status == "fail" || res.Status == "warn" {
			out[res.ID] = res.Status
		}
	}
	return out
}

// Undecided are the instances a --strict run cannot count as evidence
// (inconclusive, unverifiable), with their reasons, but those of the
// cases except names (by case ID).
func (r *RunReport) Undecided(except ...string) map[string]string {
	out := map[string]string{}
	for _, res := range r.Results {
		if (res.Status == "inconclusive" || res.Status == "unverifiable") && !slices.Contains(except, res.ID) {
			out[res.Name] = res.Reason + res.Observed
		}
	}
	return out
}

// Passed is nil when a --strict run with report r exited code 0 with
// nothing failing and nothing undecided but the cases except names, else
// what it did instead.
func (r *RunReport) Passed(code int, except ...string) error {
	if undecided := r.Undecided(except...); code != 0 || len(undecided) > 0 {
		return fmt.Errorf("exit %d (%s), want 0; failing %v; undecided %v", code, r.Outcome, r.Failing(), undecided)
	}
	return nil
}

// Caught is nil when a --strict run with report r exited code 1 with
// case want failing, else what it did instead.
func (r *RunReport) Caught(code int, want string) error {
	if failing := r.Failing(); code != 1 || failing[want] == "" {
		return fmt.Errorf("exit %d, failing %v: want exit 1 with %s failing", code, failing, want)
	}
	return nil
}

// EditConfig writes the YAML config at path, edited by edit (base_url,
// ...), into a directory of the test's, and returns the file written.
func EditConfig(t testing.TB, path string, edit func(cfg map[string]any)) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(cfg)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(config, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return config
}

// RunConfig runs `idemcheck run --config` with the YAML config at path,
// edited by edit (base_url, ...), and args, and returns its exit code and
// JSON report.
func RunConfig(t testing.TB, path string, edit func(cfg map[string]any), args ...string) (int, *RunReport) {
	t.Helper()
	config := EditConfig(t, path, edit)
	report := filepath.Join(filepath.Dir(config), "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, BuildIdemcheck(t), append([]string{"run", "--config", config, "--json", report}, args...)...)
	text, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("exit %d, no JSON report: %v\n%s", code, err, text)
	}
	var rep RunReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.ExitCode != code {
		t.Errorf("the report says exit %d, the process exited %d", rep.ExitCode, code)
	}
	return code, &rep
}

// Idemcheck runs the idemcheck binary with args and env added, and
// returns its exit code and combined output.
func Idemcheck(t testing.TB, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, BuildIdemcheck(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	case err != nil:
		t.Fatal(err)
	}
	return 0, string(out)
}

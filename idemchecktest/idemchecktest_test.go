package idemchecktest_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestHandler checks the reference demo in-process through Handler: every
// selected instance gets its subtest, and the engine's report (OnReport)
// holds the same instances with a passing outcome.
func TestHandler(t *testing.T) {
	app, err := demo.New(demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	var rep *scenarios.Report
	t.Run("catalog", func(t *testing.T) {
		idemchecktest.Handler(t, app, idemchecktest.Config{},
			idemchecktest.Only("replay/**", "mismatch/**"), idemchecktest.Strict(),
			idemchecktest.OnReport(func(r *scenarios.Report) { rep = r }))
	})
	if rep == nil || len(rep.Results) == 0 {
		t.Fatal("OnReport got no report")
	}
	if j := rep.Judge(); j.Outcome != scenarios.OutcomePass {
		t.Errorf("the reference under ietf: outcome %s: %v %v", j.Outcome, j.Problems, j.WithoutEvidence)
	}
	for _, r := range rep.Results {
		if !strings.HasPrefix(r.ID, "replay/") && !strings.HasPrefix(r.ID, "mismatch/") {
			t.Errorf("%s ran although Only selected replay and mismatch", r.Name())
		}
	}
}

// TestOutsideModule runs go test in examples/gotest-module, a module of
// its own that requires this one (replace ../..), as a project would: the
// three-line uses keep compiling and keep their meaning.
func TestOutsideModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a separate module (-short)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	good := demotest.Serve(t, demo.Options{})
	defective := demotest.Serve(t, demo.Options{Defects: []string{"no-fingerprint"}})
	// The narrowed run's server counts what it is sent.
	app, err := demo.New(demo.Options{Defects: []string{"no-fingerprint"}})
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	counted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		app.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { counted.Close(); _ = app.Close() })
	for _, tc := range []struct {
		name, rule, run, tg string
		wantFail            bool
		want, notWant       string
	}{
		{"handler", "Handler on the reference middleware passes", "^TestMiddleware$", "", false,
			"--- PASS: TestMiddleware/mismatch/changed-body@charges", "--- FAIL"},
		{"server", "Run against a server following the reference contract passes", "^TestServer$", good, false,
			"--- PASS: TestServer/replay/same-status@charges", "--- FAIL"},
		{"defect", "Run against a server that ignores the body fails naming the case and its rule", "^TestServer$", defective, true,
			"--- FAIL: TestServer/mismatch/changed-body@charges", ""},
		{"narrowed", "go test -run narrows what is sent, not only what is shown", "^TestServer$/^mismatch$/^changed-body", counted.URL, true,
			"--- FAIL: TestServer/mismatch/changed-body@charges", "replay/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), goBin, "test", "-count=1", "-v", "-run", tc.run, ".")
			cmd.Dir = filepath.Join("..", "examples", "gotest-module")
			cmd.Env = append(os.Environ(), "GOWORK=off", "IDEMCHECK_TARGET="+tc.tg)
			cmd.WaitDelay = 10 * time.Second
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tc.wantFail {
				t.Fatalf("rule: %s: go test error %v:\n%s", tc.rule, err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("rule: %s: no %q in:\n%s", tc.rule, tc.want, out)
			}
			if tc.notWant != "" && strings.Contains(string(out), tc.notWant) {
				t.Fatalf("rule: %s: %q in:\n%s", tc.rule, tc.notWant, out)
			}
			// Two instances send a few requests each; the catalog, hundreds.
			if tc.name == "narrowed" {
				t.Logf("the narrowed run sent %d requests", sent.Load())
			}
			if tc.name == "narrowed" && sent.Load() > 60 {
				t.Errorf("rule: %s: the server got %d requests", tc.rule, sent.Load())
			}
			// A subtest's line shows the engine's time for its instance
			// (go test's own "(0.00s)" counts from a late resume).
			if tc.name == "server" && !regexp.MustCompile(`pass in [1-9][0-9.]*s \(engine time\)`).Match(out) {
				t.Errorf("rule: a subtest logs its instance's engine time: no instance (the slow ones take over 1 s) logs one in:\n%s", out)
			}
			if tc.wantFail && !strings.Contains(string(out), "draft §") {
				t.Errorf("rule: %s: the failure quotes no spec sentence:\n%s", tc.rule, out)
			}
		})
	}
}

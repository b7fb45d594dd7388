package main

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// check runs the catalog under --strict against build d of adcpagent,
// served over loopback.
func check(t *testing.T, d defect) (int, *testenv.RunReport) {
	t.Helper()
	s := newServer(3*time.Second, d)
	srv := httptest.NewServer(s.routes())
	t.Cleanup(srv.Close)
	return testenv.RunConfig(t, "idemcheck.yaml", func(c map[string]any) { c["base_url"] = srv.URL }, "--strict")
}

// TestCorrectBuild: the correct build passes the whole catalog under
// --strict: nothing fails, warns or stays undecided.
func TestCorrectBuild(t *testing.T) {
	code, rep := check(t, "")
	if code != 0 {
		t.Errorf("exit %d (%s), want 0; failing %v; undecided %v", code, rep.Outcome, rep.Failing(), rep.Undecided())
	}
}

// TestDefects: each planted defect fails the run, naming the case that
// catches it.
func TestDefects(t *testing.T) {
	for d, want := range map[defect]string{
		ignoresKey:         "replay/single-execution",
		noFingerprint:      "mismatch/changed-body",
		leaksPayload:       "mismatch/changed-body",
		executesOnMismatch: "mismatch/original-survives",
	} {
		t.Run(string(d), func(t *testing.T) {
			code, rep := check(t, d)
			failing := rep.Failing()
			if code != 1 || failing[want] == "" {
				t.Errorf("exit %d, failing %v: want exit 1 with %s failing", code, failing, want)
			}
		})
	}
}

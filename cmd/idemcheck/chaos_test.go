package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/chaos/drive"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/suite"
)

// TestChaosCLI: the documented exit codes of `idemcheck chaos`, and
// `idemcheck analyze` agreeing with it on the kept history.
func TestChaosCLI(t *testing.T) {
	good := demoURL(t, demo.Options{})
	defective := demoURL(t, demo.Options{Defects: []string{"no-inflight-lock"}})
	dir := t.TempDir()
	cases := []struct {
		name, target, history string
		faults                []string
		code                  int
		out                   string
	}{
		{"correct reference", good, filepath.Join(dir, "good.jsonl"), []string{"drop-response:0.3"}, exitOK, "exactly-once: OK"},
		{"no-inflight-lock", defective, filepath.Join(dir, "bad.jsonl"), []string{"drop-response:0.3"}, exitFail, "double-execution key="},
		{"bad fault spec", good, "", []string{"drop-response:p=0.3,mode=slam"}, exitUsage, ""},
		{"unreachable", closedPort(t), "", nil, exitUnreachable, ""},
		{"remote target", "http://192.0.2.1:80", "", nil, exitUsage, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			f := chaosFlags{sel: suite.Selection{Target: tc.target},
				cfg: drive.Config{Ops: 300, Concurrency: 8, Faults: tc.faults, Seed: 3, History: tc.history, MaxAttempts: 20, Deadline: time.Minute}}
			err := runChaos(t.Context(), &out, f)
			code := exitOK
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			} else if err != nil {
				t.Fatalf("error without exit code: %v", err)
			}
			if code != tc.code || !strings.Contains(out.String(), tc.out) {
				t.Fatalf("exit %d (%v), output:\n%s\nwant exit %d and %q", code, err, out.String(), tc.code, tc.out)
			}
			if tc.history != "" {
				if got := run([]string{"analyze", tc.history}); got != tc.code {
					t.Errorf("analyze %s: exit %d, want %d like the live run", tc.history, got, tc.code)
				}
			}
		})
	}
}

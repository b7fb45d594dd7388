package drive_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/chaos/drive"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// reference serves the demo app with defects and returns its Target, with
// the slow variant shortened so storms stay quick in CI.
func reference(t *testing.T, defects ...string) *apispec.Target {
	t.Helper()
	tg, err := apispec.FromURL(demotest.Serve(t, demo.Options{Defects: defects, Lease: 5 * time.Second}), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tg.Operations {
		tg.Operations[i].Variants[apispec.VariantSlow] = apispec.Variant{Patch: json.RawMessage(`{"delay_ms":300}`), Duration: 300 * time.Millisecond}
	}
	return tg
}

var standardFaults = mustRules("drop-response:0.3", "reset-midbody:0.05", "duplicate:0.1")

func mustRules(specs ...string) []chaos.Rule {
	rs, err := chaos.ParseRules(specs)
	if err != nil {
		panic(err)
	}
	return rs
}

// The harness against the correct reference finds nothing, and against
// each defect it can see finds that defect under the rule that names it.
func TestReference(t *testing.T) {
	cases := []struct {
		defect      string
		explanation string
		rule        string // "" = no violation allowed
	}{
		{"", "the correct reference: every key executes once, every client learns its result", ""},
		{"no-inflight-lock", "storm retries during a slow first attempt execute again", chaos.RuleDoubleExecution},
		{"check-then-insert", "concurrent same-key copies both pass the check and execute", chaos.RuleDoubleExecution},
		{"no-fingerprint", "a retry with a changed body after a lost response is answered 2xx", chaos.RuleFingerprintIgnored},
		{"cache-5xx", "a transient 503 is replayed instead of re-executed", chaos.RuleErrorReplayed},
	}
	for _, tc := range cases {
		t.Run("defect="+tc.defect, func(t *testing.T) {
			tg := reference(t, defectList(tc.defect)...)
			res, err := drive.Run(context.Background(), tg, drive.WithOps(1000), drive.WithConcurrency(16),
				drive.WithFaults(standardFaults...), drive.WithSeed(7), drive.WithDeadline(2*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if res.Ops != 1000 || res.Faults["drop-response"] == 0 || res.Faults["duplicate"] == 0 || res.Faults["reset-midbody"] == 0 {
				t.Fatalf("%s: ran %d ops with faults %v: want 1000 and every fault injected", tc.explanation, res.Ops, res.Faults)
			}
			byRule := map[string]int{}
			for _, v := range res.Violations {
				byRule[v.Rule]++
			}
			if tc.rule == "" {
				for i, v := range res.Violations {
					if i < 5 {
						t.Errorf("%s: violation %+v", tc.explanation, v)
					}
				}
				if res.Unresolved > 0 {
					t.Errorf("%d operations ended without an answer", res.Unresolved)
				}
				return
			}
			if byRule[tc.rule] == 0 {
				t.Errorf("%s: no %s violation; violations by rule: %v", tc.explanation, tc.rule, byRule)
			}
			t.Logf("violations by rule: %v", byRule)
		})
	}
}

func defectList(d string) []string {
	if d == "" {
		return nil
	}
	return []string{d}
}

// ietf is the default profile (a 500ms margin before the TTL).
func ietf(t *testing.T) *apispec.Profile {
	t.Helper()
	p, err := apispec.ProfileByName("")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKeyGen: the keys of a run come from WithKeyGen's generator when the
// target brings none of its own; the history records each operation's.
func TestKeyGen(t *testing.T) {
	tg := reference(t)
	history := filepath.Join(t.TempDir(), "history.jsonl")
	gen := func(n uint64) string { return fmt.Sprintf("drive-key-%d", n) }
	res, err := drive.Run(context.Background(), tg, drive.WithOps(3), drive.WithConcurrency(1), drive.WithKeyGen(gen),
		drive.WithHistory(history))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 3; n++ {
		if want := fmt.Sprintf(`"key":"drive-key-%d"`, n); !strings.Contains(string(b), want) {
			t.Errorf("history lacks %s: the generator's keys were not used (ops %d)", want, res.Ops)
		}
	}
	if res.History != history {
		t.Errorf("result names history %q, want %q", res.History, history)
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(nil)
	srv.Close()
	tg, _ := apispec.FromURL(srv.URL, 0, 0)
	_, err := drive.Run(context.Background(), tg, drive.WithOps(1), drive.WithConcurrency(1))
	if !errors.Is(err, drive.ErrUnreachable) {
		t.Errorf("got %v, want ErrUnreachable", err)
	}
}

// TestProgressCountsWhatTheCheckCounts: the live violation count uses the
// final check's rules. Keys living 1 s make storms' retries (sent after a
// Retry-After) legal fresh executions: the effects oracle counts two, the
// final check excuses them, and the live line must not count them (it
// counted every oracle count above one). Against no-inflight-lock the live
// count finds violations and never more than the final check.
func TestProgressCountsWhatTheCheckCounts(t *testing.T) {
	for _, tc := range []struct {
		defect string
		want   string
	}{
		{"", "no violation live or final, some after-TTL executions"},
		{"no-inflight-lock", "violations live, at most the final count"},
	} {
		t.Run("defect="+tc.defect, func(t *testing.T) {
			tg, err := apispec.FromURL(demotest.Serve(t, demo.Options{Defects: defectList(tc.defect), TTL: time.Second}), time.Second, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tg.Operations {
				tg.Operations[i].Variants[apispec.VariantSlow] = apispec.Variant{Patch: json.RawMessage(`{"delay_ms":300}`), Duration: 300 * time.Millisecond}
			}
			var last drive.Progress
			var res *drive.Result
			// An after-TTL execution needs a retry that waited out a
			// Retry-After past the key's second: two or three in 300
			// operations, and none in some runs on a loaded machine. A run
			// without one proves nothing about excusing them, so up to
			// three seeds are tried before that counts as a failure.
			for seed := uint64(7); seed < 10; seed++ {
				var err error
				res, err = drive.Run(context.Background(), tg, drive.WithOps(300), drive.WithConcurrency(16),
					drive.WithFaults(standardFaults...), drive.WithSeed(seed), drive.WithDeadline(2*time.Minute),
					drive.WithProfile(ietf(t)), drive.WithProgress(func(p drive.Progress) { last = p }))
				if err != nil {
					t.Fatal(err)
				}
				if tc.defect != "" || len(res.AfterTTL) > 0 || last.Violations != 0 || len(res.Violations) != 0 {
					break
				}
				t.Logf("seed %d: no after-TTL execution, trying the next seed", seed)
			}
			if last.Done != res.Ops {
				t.Fatalf("progress saw %d of %d operations", last.Done, res.Ops)
			}
			switch {
			case tc.defect == "" && (last.Violations != 0 || len(res.Violations) != 0 || len(res.AfterTTL) == 0):
				t.Fatalf("%s: live %d, final %d, after TTL %d", tc.want, last.Violations, len(res.Violations), len(res.AfterTTL))
			case tc.defect != "" && (last.Violations == 0 || last.Violations > len(res.Violations)):
				t.Fatalf("%s: live %d, final %d", tc.want, last.Violations, len(res.Violations))
			}
			t.Logf("live %d, final %d, after TTL %d", last.Violations, len(res.Violations), len(res.AfterTTL))
		})
	}
}

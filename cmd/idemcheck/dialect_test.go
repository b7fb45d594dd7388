package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// TestDeprecatedFormat: run and list share one --format vocabulary (text,
// json); run's old word console still works, with one line on stderr, so
// CI scripts written against it do not break.
func TestDeprecatedFormat(t *testing.T) {
	url := demotest.Serve(t, demo.Options{TTL: 2 * time.Second})
	for _, tc := range []struct {
		name, rule string
		args       []string
		code       int
		stdout     string
		stderr     string // one line, or empty
	}{
		{"run-console", "run's old word is an alias of text, with a note",
			[]string{"run", "--target", url, "--run", "replay/same-status", "--format", "console"}, 0, " 0 failed, ", "--format console is deprecated, use --format text"},
		{"run-text", "run takes list's word text, silently",
			[]string{"run", "--target", url, "--run", "replay/same-status", "--format", "text"}, 0, " 0 failed, ", ""},
		{"list-console", "list takes the alias too (one vocabulary)",
			[]string{"list", "--run", "replay/same-status", "--format", "console"}, 0, "2 case instances", "--format console is deprecated, use --format text"},
		{"list-bad", "an unknown word is one line naming the flag and the words, exit 2",
			[]string{"list", "--format", "yaml"}, 2, "", `invalid argument "yaml" for "--format" flag: want text or json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			stderr := strings.TrimSpace(r.stderr)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) ||
				(tc.stderr == "") != (stderr == "") || strings.Contains(stderr, "\n") {
				t.Fatalf("rule: %s: exit %d (want %d), stderr %q (want one line with %q), stdout:\n%s", tc.rule, r.code, tc.code, r.stderr, tc.stderr, r.stdout)
			}
		})
	}
}

// TestSeedNegative: --seed is a uint64 on every command; a negative one is
// refused at parse time, before any traffic, with one line naming flag and
// value (not strconv's wording), exit 2.
func TestSeedNegative(t *testing.T) {
	down := closedPort(t)
	for _, args := range [][]string{
		{"run", "--target", down, "--seed", "-1"},
		{"chaos", "--target", down, "--seed", "-1"},
		{"proxy", "--upstream", down, "--seed", "-1"},
	} {
		r := runCLI(t, args...)
		stderr := strings.TrimSpace(r.stderr)
		if r.code != exitUsage || stderr != `idemcheck: --seed "-1": want a whole number, 0 or more` {
			t.Errorf("%s: exit %d, stderr %q: want exit 2 and one line naming --seed", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}

// TestAnalyzeJSONFile: analyze --json takes a FILE like every other --json
// (the summary still prints); "-" puts the JSON alone on stdout; the old
// bare switch is a usage error, not a silent text run.
func TestAnalyzeJSONFile(t *testing.T) {
	attempt := `{"type":"attempt","key":"k","attempt":1,"method":"POST","path":"/v1/charges","upstream":[{"status":201,"id":"x"}],"client":"ok","status":201}` + "\n"
	history := writeTemp(t, "h.jsonl", attempt)
	out := filepath.Join(t.TempDir(), "report.json")
	var rep struct {
		Keys int `json:"keys"`
	}

	r := runCLI(t, "analyze", history, "--json", out)
	b, err := os.ReadFile(out)
	if r.code != 0 || !strings.Contains(r.stdout, "exactly-once: OK") || err != nil || json.Unmarshal(b, &rep) != nil || rep.Keys != 1 {
		t.Errorf("--json FILE: exit %d, stdout %q, file %q (%v): want the summary on stdout and the report in the file", r.code, r.stdout, b, err)
	}

	r = runCLI(t, "analyze", history, "--json", "-")
	if rep.Keys = 0; r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || rep.Keys != 1 {
		t.Errorf("--json -: exit %d, stdout %q: want the JSON report alone", r.code, r.stdout)
	}

	r = runCLI(t, "analyze", history, "--json")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--json") {
		t.Errorf("bare --json: exit %d, stderr %q: want exit 2 naming --json", r.code, r.stderr)
	}
}

// TestDefectList: serve --defect repeats like every other repeatable flag,
// and the comma form (the old one) still works, alone or mixed.
func TestDefectList(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		args       []string
		want       []string
	}{
		{"repeated", "each --defect adds one", []string{"no-expiry", "no-fingerprint"}, []string{"no-expiry", "no-fingerprint"}},
		{"comma", "a comma-separated value adds each", []string{"no-expiry, no-fingerprint"}, []string{"no-expiry", "no-fingerprint"}},
		{"mixed", "both forms together", []string{"no-expiry,no-fingerprint", "no-inflight-lock"}, []string{"no-expiry", "no-fingerprint", "no-inflight-lock"}},
		{"blank", "empty items are ignored", []string{",", ""}, nil},
	} {
		got, err := defectList(tc.args)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: rule: %s: %q (%v), want %q", tc.name, tc.rule, got, err, tc.want)
		}
	}
}

// TestChaosReportWords: the chaos summary prints tallies and evidence as
// words and numbers, sorted, never Go's map[k:v] or [a b].
func TestChaosReportWords(t *testing.T) {
	two := 2
	var out bytes.Buffer
	printChaosReport(&out, chaos.Report{Keys: 3, Ops: 3, Attempts: 9,
		Faults:   map[string]int{"duplicate": 74, "drop-response": 239},
		Outcomes: map[string]int{"ok": 2, "gave-up": 1},
		Violations: []chaos.Violation{{Key: "k1", Rule: "double-execution", Kind: "charge", Detail: "two ids",
			IDs: []string{"a", "b"}, Statuses: []int{201, 201}, Oracle: &two}}})
	for _, want := range []string{
		"faults injected: drop-response 239, duplicate 74\n",
		"client outcomes: gave-up 1, ok 2\n",
		"exactly-once: 1 VIOLATIONS (double-execution 1)\n",
		"ids=a,b upstream statuses=201,201 oracle=2\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if strings.ContainsAny(out.String(), "[]") {
		t.Errorf("summary has Go slice or map formatting:\n%s", out.String())
	}
	out.Reset()
	printChaosReport(&out, chaos.Report{})
	if !strings.Contains(out.String(), "faults injected: none\n") {
		t.Errorf("no faults: want none:\n%s", out.String())
	}
}

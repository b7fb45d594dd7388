package main

import (
	"encoding/json"
	"encoding/xml"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// summaryLine is the console's first summary line, which CI parsers read.
var summaryLine = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed, (\d+) warned, (\d+) skipped$`)

// writeTemp writes content to a file in a test temp dir.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// closedPort returns a loopback URL nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// referenceConfig is examples/reference.yaml pointed at url.
func referenceConfig(t *testing.T, url string) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/reference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, "reference.yaml", strings.Replace(string(b), "base_url: http://127.0.0.1:8080", "base_url: "+url, 1))
}

// TestRunCLI: exit codes and messages of `idemcheck run`, one row per
// documented outcome, against the reference demo app on loopback.
func TestRunCLI(t *testing.T) {
	good := demotest.Serve(t, demo.Options{TTL: 2 * time.Second})
	defective := demotest.Serve(t, demo.Options{TTL: 2 * time.Second, Defects: []string{"no-fingerprint"}})
	down := closedPort(t)
	dir := t.TempDir()
	junit, jsonPath, md := filepath.Join(dir, "j.xml"), filepath.Join(dir, "r.json"), filepath.Join(dir, "s.md")
	mismatchKnown := writeTemp(t, "known.txt", "# the defect breaks these\nmismatch/changed-body\n\nmismatch/added-field   # and this one\n")
	staleKnown := writeTemp(t, "stale.txt", "replay/same-status\n")

	for _, tc := range []struct {
		name, rule string
		args       []string
		code       int
		stdout     []string // substrings of stdout
		stderr     []string // substrings of stderr
		oneLine    bool     // stderr is exactly one line
	}{
		{"pass", "the reference passes: exit 0 and the summary line",
			[]string{"run", "--target", good, "--ttl", "2s", "--junit", junit, "--json", jsonPath, "--markdown", md},
			0, []string{" 0 failed, 0 warned, "}, nil, false},
		{"config", "--config drives the same run as --target",
			[]string{"run", "--config", referenceConfig(t, good), "--run", "replay/**"},
			0, []string{" 0 failed, 0 warned, "}, nil, false},
		{"defect", "a defect fails the run with exit 1 and names the failing cases",
			[]string{"run", "--target", defective, "--run", "mismatch/**"},
			1, []string{"Failures:", "reproduce: curl"}, []string{"failing: ", "mismatch/changed-body@charges"}, true},
		{"known-failing", "failures listed as known-failing do not fail the run",
			[]string{"run", "--target", defective, "--run", "mismatch/changed-body", "--run", "mismatch/added-field", "--known-failing", mismatchKnown},
			0, []string{"failed as expected"}, nil, false},
		{"stale-known-failing", "a known-failing case that passes fails the run",
			[]string{"run", "--target", good, "--run", "replay/same-status", "--known-failing", staleKnown},
			1, []string{"remove it from the list"}, []string{"replay/same-status@charges: listed as known-failing but passed"}, true},
		{"unreachable", "a closed port exits 4",
			[]string{"run", "--target", down}, 4, nil, []string{"target unreachable"}, true},
		{"both", "--config and --target together are a usage error",
			[]string{"run", "--target", good, "--config", "x.yaml"}, 2, nil, []string{"either --config or --target"}, true},
		{"neither", "neither --config nor --target is a usage error",
			[]string{"run"}, 2, nil, []string{"--config FILE or --target URL"}, true},
		{"unknown-profile", "an unknown profile names the valid ones",
			[]string{"run", "--target", good, "--profile", "nope"}, 2, nil, []string{`unknown profile "nope"`}, true},
		{"malformed-yaml", "malformed YAML names the file",
			[]string{"run", "--config", writeTemp(t, "bad.yaml", "base_url: [unclosed\n")}, 2, nil, []string{"bad.yaml"}, true},
		{"unknown-field", "an unknown config field is named",
			[]string{"run", "--config", writeTemp(t, "field.yaml", "base_url: http://127.0.0.1:1\nbase_ulr: x\n")}, 2, nil, []string{"base_ulr"}, true},
		{"bad-pointer", "a bad JSON pointer is named",
			[]string{"run", "--config", writeTemp(t, "ptr.yaml", "base_url: http://127.0.0.1:1\nprincipals: [{name: a, headers: {X: y}}]\noperations: [{name: o, method: POST, path: /o, id_pointer: id}]\n")},
			2, nil, []string{"id_pointer"}, true},
		{"missing-config", "a config file that does not exist is a usage error",
			[]string{"run", "--config", filepath.Join(dir, "nope.yaml")}, 2, nil, []string{"nope.yaml"}, true},
		{"missing-known-failing", "a known-failing file that does not exist is a usage error",
			[]string{"run", "--target", good, "--known-failing", filepath.Join(dir, "nope.txt")}, 2, nil, []string{"--known-failing"}, true},
		{"no-selection", "globs that select nothing are a usage error, before any traffic",
			[]string{"run", "--target", down, "--run", "nothing/*"}, 2, nil, []string{"select no case"}, true},
		{"ttl-too-short", "a TTL too short for a case skips it, and the summary names the TTL that runs every case",
			[]string{"run", "--target", good, "--ttl", "2s", "--run", "concurrent/conflict-not-poisoned@charges"}, 0,
			[]string{"ttl too short: 1 case instances skipped; a declared ttl ≥ 2.5s runs them all"}, nil, false},
		{"skip-matches-nothing", "a --skip that matches nothing is a one-line warning naming the close match (the run goes on: here to the closed port)",
			[]string{"run", "--target", down, "--run", "replay/same-status", "--skip", "**@refunds"}, 4, nil,
			[]string{"warning: --skip '**@refunds' matches no case (did you mean '**/*@refunds'?)", "target unreachable"}, false},
		{"run-selects-nothing", "a --run that selects nothing names the close match in its error",
			[]string{"run", "--target", down, "--run", "**@refunds"}, 2, nil, []string{"select no case", "did you mean '**/*@refunds'?"}, true},
		{"bad-format", "an unknown --format is a usage error",
			[]string{"run", "--target", good, "--format", "xml"}, 2, nil, []string{`--format "xml": want text or json`}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != tc.code {
				t.Fatalf("rule: %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.rule, r.code, tc.code, r.stdout, r.stderr)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("rule: %s: stdout lacks %q:\n%s", tc.rule, want, r.stdout)
				}
			}
			for _, want := range tc.stderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("rule: %s: stderr lacks %q:\n%s", tc.rule, want, r.stderr)
				}
			}
			if tc.oneLine && strings.Count(strings.TrimRight(r.stderr, "\n"), "\n") != 0 {
				t.Errorf("rule: errors are one clear line; stderr:\n%s", r.stderr)
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
				t.Errorf("rule: never a stack trace:\n%s", r.stderr)
			}
			if tc.code == 0 && !summaryLine.MatchString(r.stdout) {
				t.Errorf("rule: the console ends with N passed, N failed, N warned, N skipped:\n%s", r.stdout)
			}
		})
	}

	// The files the passing run wrote.
	var suites struct {
		Tests int `xml:"tests,attr"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
		} `xml:"testsuite>testcase"`
	}
	if b, err := os.ReadFile(junit); err != nil {
		t.Fatal(err)
	} else if err := xml.Unmarshal(b, &suites); err != nil || suites.Tests == 0 || len(suites.Cases) != suites.Tests {
		t.Fatalf("--junit: %v, %d tests, %d testcases", err, suites.Tests, len(suites.Cases))
	}
	for _, c := range suites.Cases {
		if c.Name == "" || c.Classname == "" || !strings.HasPrefix(c.Name, c.Classname+"/") {
			t.Errorf("--junit: testcase %q classname %q", c.Name, c.Classname)
		}
	}
	if doc := readJSON(t, jsonPath); doc["schema"] != "idemcheck.report/v1" || doc["outcome"] != "pass" {
		t.Errorf("--json: schema %v outcome %v", doc["schema"], doc["outcome"])
	}
	if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "## idemcheck conformance: ✅ pass") {
		t.Errorf("--markdown: %v\n%s", err, b)
	}
}

// TestRunFormatJSON: --format json puts the JSON report alone on stdout.
func TestRunFormatJSON(t *testing.T) {
	url := demotest.Serve(t, demo.Options{TTL: 2 * time.Second})
	r := runCLI(t, "run", "--target", url, "--run", "replay/same-status", "--format", "json")
	var doc struct {
		Schema  string           `json:"schema"`
		Results []map[string]any `json:"results"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &doc) != nil || doc.Schema != "idemcheck.report/v1" || len(doc.Results) != 2 {
		t.Fatalf("exit %d, stdout is not the JSON report:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// TestListCLI: list is a dry run that works with no target and says what
// a config lacks.
func TestListCLI(t *testing.T) {
	noOracle := writeTemp(t, "min.yaml", "base_url: http://127.0.0.1:1\nprincipals: [{name: a, headers: {X-Api-Key: k}}]\n"+
		"operations: [{name: things, method: POST, path: /things, body: {a: 1}}]\n")
	for _, tc := range []struct {
		name, rule string
		args       []string
		code       int
		want       []string
	}{
		{"no-target", "with no target it lists the reference contract's instances",
			[]string{"list"}, 0, []string{"replay/same-status@charges", "replay/same-status@refunds", "IK-REPLAY-1", "case instances"}},
		{"lacks", "a config without oracle or variants says what each case lacks",
			[]string{"list", "--config", noOracle}, 0, []string{"@things", "lacks "}},
		{"select", "--run narrows the list",
			[]string{"list", "--run", "replay/same-status"}, 0, []string{"2 case instances"}},
		{"skip", "--skip narrows the list too, and one that matches nothing is a warning naming the close match",
			[]string{"list", "--run", "replay/same-status", "--skip", "**/*@refunds", "--skip", "**@refunds"}, 0,
			[]string{"1 case instances", "warning: --skip '**@refunds' matches no case (did you mean '**/*@refunds'?)"}},
		{"forecast", "the TTL's skips are forecast and not runnable: runnable equals what run judges",
			[]string{"list", "--ttl", "2s", "--run", "concurrent/conflict-not-poisoned"}, 0,
			[]string{"skips: declared ttl 2s is too short for this case: needs ttl ≥ 2.5s", "2 case instances, 0 runnable"}},
		{"bad-config", "a bad config is a usage error",
			[]string{"list", "--config", writeTemp(t, "bad.yaml", "nope: [")}, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != tc.code {
				t.Fatalf("rule: %s: exit %d, want %d\n%s%s", tc.rule, r.code, tc.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout+r.stderr, w) {
					t.Errorf("rule: %s: output lacks %q:\n%s%s", tc.rule, w, r.stdout, r.stderr)
				}
			}
		})
	}
}

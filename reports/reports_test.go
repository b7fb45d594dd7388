package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

// charge is the request the failing sample result sends twice.
var charge = wire.ExchangeRequest{Method: "POST", URL: "http://127.0.0.1:9/v1/charges",
	Header: http.Header{"Idempotency-Key": {`"k'1"`}, "Content-Type": {"application/json"}, "Content-Length": {"16"}},
	Body:   []byte(`{"amount":1000}`)}

// sample is a hand-built report with one result of every kind.
func sample(strict bool) *scenarios.Report {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	meta := func(id, level string) scenarios.Meta {
		fam, _, _ := strings.Cut(id, "/")
		return scenarios.Meta{ID: id, Family: fam, Level: scenarios.Level(level),
			Requirements: []string{"IK-" + strings.ToUpper(fam) + "-1"},
			Requirement:  "The server SHOULD do the " + fam + " thing.",
			Explanation:  "plain words for " + id}
	}
	failing := scenarios.Result{Meta: meta("replay/one-execution", "MUST"), Operation: "charges",
		Status: scenarios.Fail, Expected: "1 execution", Observed: "2 executions", Reason: "the replay re-executed",
		Duration: 30 * time.Millisecond,
		Exchanges: []wire.Exchange{
			{Label: "first", Request: charge, Start: t0, Duration: 5 * time.Millisecond,
				Response: &wire.ExchangeResponse{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte("{\"id\":\"ch_1\"}\x00")}},
			{Label: "replay", Request: charge, Start: t0, Duration: 4 * time.Millisecond,
				Response: &wire.ExchangeResponse{Status: 201, Body: []byte{0xff, 0xfe}}},
		}}
	return &scenarios.Report{
		Target: "http://127.0.0.1:9", Profile: "ietf", Strict: strict, Seed: 7, Started: t0, Duration: 2 * time.Second,
		Results: []scenarios.Result{
			{Meta: meta("replay/same-status", "SHOULD"), Operation: "charges", Status: scenarios.Pass, Duration: time.Millisecond},
			{Meta: meta("replay/same-status", "SHOULD"), Operation: "refunds", Status: scenarios.Pass},
			failing,
			{Meta: meta("missing/rejected", "SHOULD"), Operation: "charges", Status: scenarios.Warn, Expected: "400", Observed: "201"},
			{Meta: meta("expiry/fresh-after-ttl", "MAY"), Operation: "charges", Status: scenarios.Skip, Reason: "no ttl declared"},
			{Meta: meta("concurrent/burst", "MUST"), Operation: "charges", Status: scenarios.Unverifiable, Reason: "no oracle"},
			{Meta: meta("concurrent/in-flight", "SHOULD"), Operation: "charges", Status: scenarios.Inconclusive, Reason: "no overlap"},
			{Meta: meta("scope/other-endpoint", "MAY"), Operation: "charges", Status: scenarios.Fail, KnownFailing: true, Expected: "a", Observed: "b"},
			{Meta: meta("scope/other-user", "MUST"), Operation: "charges", Status: scenarios.Pass, KnownFailing: true},
		},
	}
}

func render(t *testing.T, write func(*bytes.Buffer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestConsole(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		strict     bool
		opt        ConsoleOptions
		check      func(out string) bool
	}{
		{"summary-line", "the first summary line is exactly N passed, N failed, N warned, N skipped, in that order",
			false, ConsoleOptions{}, func(out string) bool {
				return regexp.MustCompile(`(?m)^2 passed, 2 failed, 1 warned, 1 skipped$`).MatchString(out)
			}},
		{"second-line", "unverifiable, inconclusive and expected failures follow on their own line",
			false, ConsoleOptions{}, func(out string) bool {
				return strings.Contains(out, "1 unverifiable, 1 inconclusive, 1 failed as expected; 9 results")
			}},
		{"strict-warn", "under --strict a warning counts as a failure",
			true, ConsoleOptions{}, func(out string) bool { return strings.Contains(out, "2 passed, 3 failed, 0 warned, 1 skipped") }},
		{"family-tree", "families head the tree and each case lists its operations",
			false, ConsoleOptions{}, func(out string) bool {
				return regexp.MustCompile(`(?m)^replay\n  ✓ replay/same-status \[SHOULD\] IK-REPLAY-1\n      ✓ charges 1ms\n      ✓ refunds\n  ✗ replay/one-execution`).MatchString(out)
			}},
		{"markers", "each status has its marker: ! warn, - skip, ? unverifiable and inconclusive, x expected failure",
			false, ConsoleOptions{}, func(out string) bool {
				return strings.Contains(out, "  ! missing/rejected") && strings.Contains(out, "  - expiry/fresh-after-ttl") &&
					strings.Contains(out, "  ? concurrent/burst") && strings.Contains(out, "  ? concurrent/in-flight") &&
					strings.Contains(out, "  x scope/other-endpoint")
			}},
		{"recap", "the failure recap names requirement, expected, observed and a curl reproduction",
			false, ConsoleOptions{}, func(out string) bool {
				_, recap, ok := strings.Cut(out, "Failures:")
				return ok && strings.Contains(recap, "1) replay/one-execution@charges fail [MUST]") &&
					strings.Contains(recap, "requirement: The server SHOULD do the replay thing.") &&
					strings.Contains(recap, "expected:    1 execution") && strings.Contains(recap, "observed:    2 executions") &&
					strings.Contains(recap, "reproduce: "+wire.Exchange{Request: charge}.Curl())
			}},
		{"stale-known-failing", "a known-failing case that passes is in the recap and says to remove it",
			false, ConsoleOptions{}, func(out string) bool {
				return strings.Contains(out, "2) scope/other-user@charges") && strings.Contains(out, "remove it from the list")
			}},
		{"binary-body", "a non-UTF-8 body is described, not dumped",
			false, ConsoleOptions{}, func(out string) bool { return strings.Contains(out, "< (2 bytes, not UTF-8)") }},
		{"no-colour", "without Color there is no escape sequence",
			false, ConsoleOptions{}, func(out string) bool { return !strings.Contains(out, "\x1b[") }},
		{"colour", "with Color the fail marker is red",
			false, ConsoleOptions{Color: true}, func(out string) bool { return strings.Contains(out, ansiRed+"✗"+ansiReset) }},
		{"fail-reason", "a failure's tree line says why, with what was expected and observed",
			false, ConsoleOptions{}, func(out string) bool {
				return strings.Contains(out, "✗ charges 30ms: the replay re-executed (expected 1 execution, observed 2 executions)")
			}},
		{"skip-reason", "without verbose a skipped case says why on its own line, once for all its operations",
			false, ConsoleOptions{}, func(out string) bool {
				return strings.Contains(out, "\n  - expiry/fresh-after-ttl [MAY] IK-EXPIRY-1: no ttl declared (charges)\n")
			}},
		{"skip-groups", "skips are grouped by reason after the tree",
			false, ConsoleOptions{}, func(out string) bool {
				_, groups, ok := strings.Cut(out, "Skipped, by reason:\n")
				return ok && strings.HasPrefix(groups, "  skip   1 case: no ttl declared — expiry/fresh-after-ttl\n")
			}},
		{"warn-observation", "a warning's tree line carries its observation",
			false, ConsoleOptions{}, func(out string) bool { return strings.Contains(out, "! charges: expected 400, observed 201\n") }},
		{"strict-observation", "a SHOULD unmet under --strict carries its observation beside the rule that made it fail",
			true, ConsoleOptions{}, func(out string) bool {
				return strings.Contains(out, "✗ charges: expected 400, observed 201 (SHOULD unmet; --strict makes it a failure)\n")
			}},
		{"requirements", "requirements are counted per level after the instance counts",
			false, ConsoleOptions{}, func(out string) bool {
				return strings.Contains(out, "\nMUST: 1 requirement verified, 1 violated (by 1 case instance), 1 without evidence\nSHOULD: 1 requirement verified, 1 violated (by 1 case instance), 1 without evidence\n")
			}},
		{"no-evidence-recap", "a MUST without evidence is recapped with its reason and the way out",
			false, ConsoleOptions{}, func(out string) bool {
				_, recap, ok := strings.Cut(out, "Not enough evidence (MUST):")
				return ok && strings.Contains(recap, "? concurrent/burst@charges unverifiable: no oracle") &&
					strings.Contains(recap, "to decide it: configure an oracle or an id_pointer") && strings.Contains(recap, "--allow-incomplete")
			}},
		{"no-evidence-tree", "a MUST without evidence shows its reason in the tree without --verbose",
			false, ConsoleOptions{}, func(out string) bool { return strings.Contains(out, "? charges: no oracle") }},
		{"outcome", "the last line is the outcome with its exit code",
			false, ConsoleOptions{}, func(out string) bool { return strings.HasSuffix(out, "outcome: fail (exit 1)\n") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := render(t, func(b *bytes.Buffer) error { return Console(b, sample(tc.strict), tc.opt) })
			if !tc.check(out) {
				t.Errorf("rule: %s\noutput:\n%s", tc.rule, out)
			}
		})
	}
}

// junitDoc mirrors the JUnit XSD elements the CI readers need.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    *int     `xml:"tests,attr"`
	Failures *int     `xml:"failures,attr"`
	Suites   []struct {
		Name     *string `xml:"name,attr"`
		Tests    *int    `xml:"tests,attr"`
		Failures *int    `xml:"failures,attr"`
		Errors   *int    `xml:"errors,attr"`
		Skipped  *int    `xml:"skipped,attr"`
		Props    []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name      *string `xml:"name,attr"`
			Classname *string `xml:"classname,attr"`
			Time      *string `xml:"time,attr"`
			Failure   *struct {
				Message *string `xml:"message,attr"`
				Text    string  `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message *string `xml:"message,attr"`
				Type    string  `xml:"type,attr"`
			} `xml:"error"`
			Skipped *struct {
				Message *string `xml:"message,attr"`
			} `xml:"skipped"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnit(t *testing.T) {
	out := render(t, func(b *bytes.Buffer) error { return JUnit(b, sample(false)) })
	var doc junitDoc
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("JUnit output does not parse: %v\n%s", err, out)
	}
	cases := map[string]int{} // name -> suite index
	totalTests, totalFail := 0, 0
	for si, s := range doc.Suites {
		if s.Name == nil || s.Tests == nil || s.Failures == nil || s.Errors == nil || s.Skipped == nil {
			t.Fatalf("rule: a testsuite has name, tests, failures, errors, skipped attributes (suite %d)", si)
		}
		if *s.Tests != len(s.Cases) {
			t.Errorf("rule: testsuite tests= equals its testcase count: %s has %d, says %d", *s.Name, len(s.Cases), *s.Tests)
		}
		fails, skips, errs := 0, 0, 0
		for _, c := range s.Cases {
			if c.Name == nil || *c.Name == "" || c.Classname == nil || *c.Classname == "" || c.Time == nil {
				t.Fatalf("rule: every testcase has name, classname and time (h2spec#123): %+v", c)
			}
			if *c.Classname != *s.Name {
				t.Errorf("rule: classname is the family: %s in suite %s", *c.Classname, *s.Name)
			}
			if c.Failure != nil {
				fails++
				if c.Failure.Message == nil || *c.Failure.Message == "" || c.Failure.Text == "" {
					t.Errorf("rule: a failure has a message and evidence: %s", *c.Name)
				}
			}
			if c.Error != nil {
				errs++
				if c.Error.Message == nil || *c.Error.Message == "" || c.Error.Type == "" {
					t.Errorf("rule: an error has a message and a type: %s", *c.Name)
				}
			}
			if c.Skipped != nil {
				skips++
				if c.Skipped.Message == nil || *c.Skipped.Message == "" {
					t.Errorf("rule: a skipped testcase says why: %s", *c.Name)
				}
			}
			cases[*c.Name] = si
		}
		props := map[string]string{}
		for _, p := range s.Props {
			props[p.Name] = p.Value
		}
		if props["outcome"] != "fail" || props["exit_code"] != "1" || props["interrupted"] != "false" {
			t.Errorf("rule: every suite carries the run's outcome, exit code and interruption: %v", props)
		}
		if fails != *s.Failures || skips != *s.Skipped || errs != *s.Errors {
			t.Errorf("rule: suite counters match its testcases: %s", *s.Name)
		}
		totalTests += *s.Tests
		totalFail += *s.Failures
	}
	if doc.Tests == nil || *doc.Tests != totalTests || doc.Failures == nil || *doc.Failures != totalFail {
		t.Errorf("rule: testsuites totals equal the sum of the suites")
	}
	for _, tc := range []struct{ name, rule, want string }{
		{"replay/one-execution@charges", "a failure names case@operation and carries curl", "failure"},
		{"scope/other-user@charges", "a stale known-failing pass is a failure", "failure"},
		{"scope/other-endpoint@charges", "an expected failure is skipped, not failed", "skipped"},
		{"concurrent/burst@charges", "a MUST without evidence is an error (it holds the run back)", "error"},
		{"concurrent/in-flight@charges", "a SHOULD inconclusive is skipped with its reason", "skipped"},
		{"expiry/fresh-after-ttl@charges", "a skip is skipped with its reason", "skipped"},
		{"missing/rejected@charges", "a warning without --strict passes, evidence in system-out", "pass"},
		{"replay/same-status@refunds", "a pass has neither failure nor skipped", "pass"},
	} {
		si, ok := cases[tc.name]
		if !ok {
			t.Errorf("rule: every result is a testcase: %s missing", tc.name)
			continue
		}
		for _, c := range doc.Suites[si].Cases {
			if *c.Name != tc.name {
				continue
			}
			got := "pass"
			switch {
			case c.Failure != nil:
				got = "failure"
				if tc.name == "replay/one-execution@charges" && !strings.Contains(c.Failure.Text, "reproduce: curl") {
					t.Errorf("rule: %s", tc.rule)
				}
			case c.Error != nil:
				got = "error"
			case c.Skipped != nil:
				got = "skipped"
			}
			if got != tc.want {
				t.Errorf("rule: %s: got %s", tc.rule, got)
			}
			if tc.name == "missing/rejected@charges" && !strings.Contains(c.SystemOut, "WARN") {
				t.Errorf("rule: %s", tc.rule)
			}
		}
	}
	// Validate against testdata/junit.xsd with xmllint when the machine has
	// it (apt-get install libxml2-utils; the structure checks
	// above run everywhere).
	if xmllint, err := exec.LookPath("xmllint"); err == nil {
		path := filepath.Join(t.TempDir(), "junit.xml")
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit.xsd", path).CombinedOutput(); err != nil {
			t.Errorf("xmllint: %v\n%s", err, b)
		}
	}
}

func TestJSON(t *testing.T) {
	out := render(t, func(b *bytes.Buffer) error { return JSON(b, sample(false)) })
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("JSON output does not parse: %v", err)
	}
	results := doc["results"].([]any)
	failing := results[2].(map[string]any)
	firstEx := failing["exchanges"].([]any)[0].(map[string]any)
	binaryResp := failing["exchanges"].([]any)[1].(map[string]any)["response"].(map[string]any)
	counts := doc["counts"].(map[string]any)
	for _, tc := range []struct {
		name, rule string
		ok         bool
	}{
		{"schema", "the document names its schema version", doc["schema"] == "idemcheck.report/v1"},
		{"outcome", "outcome is fail when anything fails the run", doc["outcome"] == "fail" && doc["exit_code"] == 1.0},
		{"requirements", "requirements are counted per level", fmtJSON(doc["requirements"].(map[string]any)["MUST"]) == `{"not_tested":0,"verified":1,"violated":1,"without_evidence":1}`},
		{"without-evidence", "the MUST instances without evidence are named", fmtJSON(doc["without_evidence"]) == `["concurrent/burst@charges"]`},
		{"incomplete", "a MUST without evidence is marked", results[5].(map[string]any)["incomplete"] == true},
		{"interrupted", "a run that was not interrupted says so", doc["interrupted"] == false},
		{"counts", "counts match the console summary", counts["passed"] == 2.0 && counts["failed"] == 2.0 && counts["warned"] == 1.0 && counts["skipped"] == 1.0 && counts["expected_failures"] == 1.0},
		{"name", "a result's name is case@operation", failing["name"] == "replay/one-execution@charges"},
		{"verdict", "verdict applies the run rules: a stale known-failing pass is fail", results[8].(map[string]any)["verdict"] == "fail" && results[8].(map[string]any)["status"] == "pass"},
		{"text-body", "a UTF-8 body is kept as text", firstEx["request"].(map[string]any)["body"] == `{"amount":1000}`},
		{"binary-body", "a non-UTF-8 body is base64", binaryResp["body_base64"] == "//4=" && binaryResp["body"] == nil},
		{"curl", "each exchange carries its curl", firstEx["curl"] == wire.Exchange{Request: charge}.Curl()},
		{"durations", "durations are milliseconds", failing["duration_ms"] == 30.0 && doc["duration_ms"] == 2000.0},
		{"arrays", "list fields are [] not null", results[0].(map[string]any)["exchanges"] != nil && results[0].(map[string]any)["needs"] != nil},
	} {
		if !tc.ok {
			t.Errorf("%s: rule: %s", tc.name, tc.rule)
		}
	}
}

func TestMarkdown(t *testing.T) {
	out := render(t, func(b *bytes.Buffer) error { return Markdown(b, sample(false)) })
	for _, tc := range []struct{ rule, want string }{
		{"the heading states the outcome", "## idemcheck conformance: ❌ fail"},
		{"the heading gives the exit code", "## idemcheck conformance: ❌ fail (exit 1)"},
		{"a counts table leads", "| 2 | 2 | 1 | 1 | 1 | 1 | 0 | 1 |"},
		{"requirements are counted per level", "| MUST | 1 | 1 | 1 | 0 |"},
		{"MUSTs without evidence are listed", "- `concurrent/burst@charges` unverifiable: no oracle"},
		{"a row per family", "| replay | 2 | 1 | 0 | 0 | 0 |"},
		{"each failure folds its evidence", "<details><summary>✗ <code>replay/one-execution@charges</code> — MUST IK-REPLAY-1</summary>"},
		{"the curl is in the folded evidence", "reproduce: curl -i -X POST"},
		{"warnings are listed", "- `missing/rejected@charges`: expected 400, observed 201"},
	} {
		if !strings.Contains(out, tc.want) {
			t.Errorf("rule: %s: missing %q\n%s", tc.rule, tc.want, out)
		}
	}
	pass := sample(false)
	pass.Results = pass.Results[:2]
	if out := render(t, func(b *bytes.Buffer) error { return Markdown(b, pass) }); !strings.Contains(out, "✅ pass") || strings.Contains(out, "### Failures") {
		t.Errorf("rule: a passing run says pass and has no failures section\n%s", out)
	}
}

// TestMarkdownAgainst: with --expect the step's exit follows the
// comparison, and so does the summary's heading.
func TestMarkdownAgainst(t *testing.T) {
	failing := sample(false)
	pass := sample(false)
	pass.Results = pass.Results[:2]
	fixed := sample(false)
	for i := range fixed.Results {
		if fixed.Results[i].Status == scenarios.Fail {
			fixed.Results[i].Status = scenarios.Pass
		}
	}
	for _, tc := range []struct {
		rule          string
		expected, got *scenarios.Report
		want, wantNot string
	}{
		{"a known failure expected: the heading says no verdict is worse, and what the run itself was",
			failing, failing, "## idemcheck conformance: ✅ no verdict worse than expected (the run itself: fail (exit 1))", "❌"},
		{"a failure not expected: the heading counts the worse verdicts and they are listed",
			pass, failing, "## idemcheck conformance: ❌ ", "✅"},
		{"worse verdicts are listed by name", pass, failing, "**Worse than expected (", ""},
		{"better verdicts are listed by name", failing, fixed, "**Better than expected (", ""},
		{"the expected report is named", failing, failing, "Judged against the expected report `want.json`", ""},
	} {
		out := render(t, func(b *bytes.Buffer) error { return MarkdownAgainst(tc.expected, "want.json")(b, tc.got) })
		if !strings.Contains(out, tc.want) || (tc.wantNot != "" && strings.Contains(strings.SplitN(out, "\n", 2)[0], tc.wantNot)) {
			t.Errorf("rule: %s: want %q (and not %q in the heading)\n%s", tc.rule, tc.want, tc.wantNot, out)
		}
	}
}

// TestFailuresMatchOutcome: the recap lists exactly the results the
// engine's Outcome counts as failing the run, in and out of strict mode.
func TestFailuresMatchOutcome(t *testing.T) {
	for _, strict := range []bool{false, true} {
		rep := sample(strict)
		j := rep.Judge()
		problems := j.Problems
		fails := Failures(rep)
		if (j.Outcome == scenarios.OutcomeFail) != (len(fails) > 0) || len(problems) != len(fails) {
			t.Errorf("strict=%t: Judge %s with %d problems, recap has %d failures", strict, j.Outcome, len(problems), len(fails))
		}
		if len(j.WithoutEvidence) != len(WithoutEvidence(rep)) {
			t.Errorf("strict=%t: Judge has %d without evidence, the recap %d", strict, len(j.WithoutEvidence), len(WithoutEvidence(rep)))
		}
		for i, r := range fails {
			if !strings.HasPrefix(problems[i], r.Name()+":") {
				t.Errorf("strict=%t: recap %d is %s, Outcome says %s", strict, i, r.Name(), problems[i])
			}
		}
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestOutcomeInEveryReport: a run held back by a MUST without evidence, and
// an interrupted one, say so in every writer, with the exit code.
func TestOutcomeInEveryReport(t *testing.T) {
	incomplete := sample(false)
	incomplete.Results = []scenarios.Result{incomplete.Results[0], incomplete.Results[5]} // a pass, a MUST unverifiable
	allowed := *incomplete
	allowed.AllowIncomplete = true
	interrupted := sample(false)
	interrupted.Interrupted = true
	interrupted.Results = append(interrupted.Results[:1], scenarios.Result{Meta: interrupted.Results[2].Meta, Operation: "charges",
		Status: scenarios.Interrupted, Reason: "cut short by the interruption, not judged"})
	for _, tc := range []struct {
		name, rule string
		rep        *scenarios.Report
		console    string
		json       string
		junit      string
		markdown   string
	}{
		{"incomplete", "a MUST without evidence: exit 5 everywhere", incomplete,
			"outcome: not enough evidence (exit 5)", `"outcome": "incomplete",
  "exit_code": 5`, `<property name="exit_code" value="5">`, "## idemcheck conformance: ⚠️ not enough evidence (exit 5)"},
		{"allowed", "--allow-incomplete accepts it: exit 0", &allowed,
			"outcome: pass (exit 0)", `"exit_code": 0`, `<property name="allow_incomplete" value="true">`, "✅ pass (exit 0)"},
		{"interrupted", "an interrupted run: exit 130, and the reports say interrupted", interrupted,
			"interrupted: instances cut short are not judged", `"interrupted": true`, `type="interrupted"`, "**Interrupted**"},
	} {
		for _, w := range []struct {
			name, want string
			write      func(*bytes.Buffer) error
		}{
			{"console", tc.console, func(b *bytes.Buffer) error { return Console(b, tc.rep, ConsoleOptions{}) }},
			{"json", tc.json, func(b *bytes.Buffer) error { return JSON(b, tc.rep) }},
			{"junit", tc.junit, func(b *bytes.Buffer) error { return JUnit(b, tc.rep) }},
			{"markdown", tc.markdown, func(b *bytes.Buffer) error { return Markdown(b, tc.rep) }},
		} {
			if out := render(t, w.write); !strings.Contains(out, w.want) {
				t.Errorf("%s/%s: rule: %s: missing %q\n%s", tc.name, w.name, tc.rule, w.want, out)
			}
		}
	}
	if out := render(t, func(b *bytes.Buffer) error { return Console(b, interrupted, ConsoleOptions{}) }); !strings.Contains(out, "~ charges") ||
		!strings.Contains(out, "1 interrupted; 2 results") || !strings.HasSuffix(out, "outcome: interrupted (exit 130)\n") {
		t.Errorf("rule: an interrupted instance has its marker and count, the outcome says exit 130\n%s", out)
	}
}

package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// catalogReport is a report with one instance per catalog case, every one
// passing except those set in status (by case ID): the shape a real run
// has, with the catalog's real levels.
func catalogReport(status map[string]scenarios.Status) *scenarios.Report {
	rep := &scenarios.Report{Target: "http://127.0.0.1:9", Profile: "ietf", Seed: 7,
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Duration: time.Second,
		Command: "idemcheck run --config api.yaml --seed 7", Config: &scenarios.Resource{Path: "api.yaml", SHA256: SHA256([]byte("base_url: x\n"))}}
	for _, c := range scenarios.Catalog() {
		s, ok := status[c.ID]
		if !ok {
			s = scenarios.Pass
		}
		rep.Results = append(rep.Results, scenarios.Result{Meta: c.Meta, Operation: "charges", Status: s, Reason: "why"})
	}
	return rep
}

// attestation writes the report as JSON and its attestation citing it.
func attestation(t *testing.T, rep *scenarios.Report) (att, report []byte) {
	t.Helper()
	var rb bytes.Buffer
	if err := JSON(&rb, rep); err != nil {
		t.Fatal(err)
	}
	p, _ := apispec.ProfileByName(rep.Profile)
	var ab bytes.Buffer
	o := AttestOptions{Tool: Tool{Version: "dev", Revision: strings.Repeat("ab", 20), GoVersion: "go1.26"}, Profile: p,
		Report: &scenarios.Resource{Path: "report.json", SHA256: SHA256(rb.Bytes())}}
	if err := Attest(&ab, rep, o); err != nil {
		t.Fatal(err)
	}
	return ab.Bytes(), rb.Bytes()
}

// TestAttestationSchema: the attestation is an in-toto Statement v1 with
// a test-result predicate, valid against the schema written from the
// spec's field lists (testdata), for a passing and a failing run.
func TestAttestationSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("testdata/intoto-test-result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		rep    *scenarios.Report
		result string
	}{
		{"pass", catalogReport(nil), ResultPassed},
		{"warn", catalogReport(map[string]scenarios.Status{"replay/same-status": scenarios.Warn}), ResultWarned},
		{"fail", catalogReport(map[string]scenarios.Status{"concurrent/same-key-burst": scenarios.Fail}), ResultFailed},
	} {
		att, _ := attestation(t, tc.rep)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(att))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(doc); err != nil {
			t.Errorf("%s: the attestation does not validate against the in-toto test-result schema: %v\n%s", tc.name, err, att)
		}
		var st struct {
			Predicate struct {
				Result      string   `json:"result"`
				FailedTests []string `json:"failedTests"`
			} `json:"predicate"`
		}
		if err := json.Unmarshal(att, &st); err != nil || st.Predicate.Result != tc.result {
			t.Errorf("%s: result %q (err %v), want %s", tc.name, st.Predicate.Result, err, tc.result)
		}
	}
	if err := sch.Validate(mustDoc(t, `{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"x"}],"predicateType":"https://in-toto.io/attestation/test-result/v0.1","predicate":{"result":"OK","configuration":[]}}`)); err == nil {
		t.Error("the schema accepts a subject without digest and an unknown result: it checks nothing")
	}
}

func mustDoc(t *testing.T, s string) any {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestVerify: an attestation checks out against its own report and
// config; one verdict changed in the report, or one byte of the config,
// is a mismatch; a claimed level that its own lists contradict too.
func TestVerify(t *testing.T) {
	rep := catalogReport(nil)
	config := []byte("base_url: x\n")
	att, report := attestation(t, rep)
	tool := Tool{Version: "dev", Revision: strings.Repeat("ab", 20)}
	if bad, err := Verify(VerifyInput{Attestation: att, Report: report, Config: config, Tool: tool}); err != nil || len(bad) != 0 {
		t.Fatalf("an untouched attestation, report and config: %v %v", bad, err)
	}
	tampered := bytes.Replace(report, []byte(`"verdict": "pass"`), []byte(`"verdict": "fail"`), 1)
	tampered = bytes.Replace(tampered, []byte(`"status": "pass"`), []byte(`"status": "fail"`), 1)
	if bad, _ := Verify(VerifyInput{Attestation: att, Report: tampered, Tool: tool}); !contains(bad, "report digest") || !contains(bad, "level \"draft-07 full\", but the report's verdicts give") {
		t.Errorf("one verdict changed in the report: want digest and level mismatches, got %v", bad)
	}
	if bad, _ := Verify(VerifyInput{Attestation: att, Config: []byte("base_url: y\n"), Tool: tool}); !contains(bad, "config digest") {
		t.Errorf("one byte of config changed: want a config mismatch, got %v", bad)
	}
	failing := catalogReport(map[string]scenarios.Status{"concurrent/same-key-burst": scenarios.Fail})
	failAtt, _ := attestation(t, failing)
	forged := bytes.Replace(failAtt, []byte(`"level": "not conformant"`), []byte(`"level": "draft-07 core"`), 1)
	if bad, _ := Verify(VerifyInput{Attestation: forged, Tool: tool}); !contains(bad, "MUST instance concurrent/same-key-burst@charges failed") {
		t.Errorf("a level its own failed list contradicts: want a mismatch, got %v", bad)
	}
	badVersion := bytes.Replace(att, []byte(`"version": "dev"`), []byte(`"version": "9.9-beta"`), 1)
	if bad, _ := Verify(VerifyInput{Attestation: badVersion, Tool: tool}); !contains(bad, "no idemcheck version") {
		t.Errorf("a version no build has: want a mismatch, got %v", bad)
	}
	warned := catalogReport(map[string]scenarios.Status{"replay/same-status": scenarios.Warn})
	warnAtt, _ := attestation(t, warned)
	if bad, _ := Verify(VerifyInput{Attestation: bytes.Replace(warnAtt, []byte(`"WARNED"`), []byte(`"PASSED"`), 1), Tool: tool}); !contains(bad, "result PASSED, but instances are listed as warned") {
		t.Errorf("PASSED beside a warned list: want a mismatch, got %v", bad)
	}
	if _, err := Verify(VerifyInput{Attestation: []byte(`{"_type":"x"}`)}); err == nil {
		t.Error("a non-statement is an error")
	}
}

func contains(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// TestBadge: a shields.io endpoint document whose colour follows the
// level: full bright green, core green, vendor yellow-green, no level
// grey, not conformant red naming the requirement.
func TestBadge(t *testing.T) {
	vendor := catalogReport(nil)
	vendor.Profile = "stripe"
	untested := catalogReport(map[string]scenarios.Status{"scope/other-user-isolated": scenarios.Skip, "scope/other-user-in-flight": scenarios.Skip,
		"security/cross-principal-guess": scenarios.Skip, "replicas/other-user-other-replica": scenarios.Skip})
	for _, tc := range []struct {
		name, colour, message string
		rep                   *scenarios.Report
	}{
		{"full", "brightgreen", "draft-07 full · ", catalogReport(nil)},
		{"core", "green", "draft-07 core · ", catalogReport(map[string]scenarios.Status{"replay/same-status": scenarios.Warn})},
		{"vendor", "yellowgreen", "stripe compatible · ", vendor},
		{"none", "lightgrey", "no level · ", untested},
		{"not conformant", "red", "not conformant · IK-CONCURRENT-2 · ", catalogReport(map[string]scenarios.Status{"concurrent/same-key-burst": scenarios.Fail})},
	} {
		var b bytes.Buffer
		if err := WriteBadge(&b, tc.rep); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		msg, _ := got["message"].(string)
		if got["schemaVersion"] != 1.0 || got["label"] != "Idempotency-Key" || got["color"] != tc.colour || !strings.HasPrefix(msg, tc.message) ||
			!strings.Contains(msg, " MUST · ") || !strings.HasSuffix(msg, " SHOULD") {
			t.Errorf("%s: got %s, want colour %s and message starting %q", tc.name, b.String(), tc.colour, tc.message)
		}
	}
}

// TestCompare: --expect fails only on verdicts worse than the expected
// report's; better ones are listed; a missing instance is worse.
func TestCompare(t *testing.T) {
	expected := catalogReport(map[string]scenarios.Status{"replay/same-status": scenarios.Warn, "concurrent/same-key-burst": scenarios.Fail})
	got := catalogReport(map[string]scenarios.Status{"replay/same-status": scenarios.Pass, "concurrent/same-key-burst": scenarios.Fail,
		"mismatch/original-survives": scenarios.Fail})
	got.Results = got.Results[:len(got.Results)-1]
	last := expected.Results[len(expected.Results)-1].Name()
	worse, better := Compare(expected, got)
	if len(worse) != 2 || !contains(worse, "mismatch/original-survives@charges: expected pass, got fail") || !contains(worse, last+": expected pass, not run") {
		t.Errorf("worse: want the new failure and the instance not run, got %v", worse)
	}
	if len(better) != 1 || better[0] != "replay/same-status@charges: expected warn, got pass" {
		t.Errorf("better: want the warning that passes now, got %v", better)
	}
}

// TestLevelInEveryReport: the level, its blocker and the command line are
// in every report; ReadJSON gets back a report that decides the same level
// and outcome.
func TestLevelInEveryReport(t *testing.T) {
	rep := catalogReport(map[string]scenarios.Status{"concurrent/same-key-burst": scenarios.Warn})
	rep.Results[0].Missing = []scenarios.Need{scenarios.NeedSlow}
	want := "not conformant: IK-CONCURRENT-2 (MUST) violated: concurrent/same-key-burst@charges: warn"
	for _, w := range []struct {
		name  string
		write func(*bytes.Buffer) error
		want  []string
	}{
		{"console", func(b *bytes.Buffer) error { return Console(b, rep, ConsoleOptions{}) }, []string{"conformance: " + want, "outcome: fail (exit 1)", "\ncommand: idemcheck run --config api.yaml --seed 7\n"}},
		{"json", func(b *bytes.Buffer) error { return JSON(b, rep) }, []string{`"level": "not conformant"`, `"command": "idemcheck run --config api.yaml --seed 7"`, `"exit_code": 1`}},
		{"junit", func(b *bytes.Buffer) error { return JUnit(b, rep) }, []string{`<property name="conformance" value="not conformant">`, `name="command" value="idemcheck run`}},
		{"markdown", func(b *bytes.Buffer) error { return Markdown(b, rep) }, []string{"**Conformance: " + want + "**", "Command: `idemcheck run"}},
		{"html", func(b *bytes.Buffer) error { return HTML(b, rep) }, []string{`data-level="not conformant"`, "idemcheck run --config api.yaml"}},
	} {
		if out := render(t, w.write); !containsAll(out, w.want) {
			t.Errorf("%s: rule: every report shows the level and the command: missing one of %q", w.name, w.want)
		}
	}
	var b bytes.Buffer
	if err := JSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Conformance() != rep.Conformance() || back.Judge().Outcome != rep.Judge().Outcome || back.Command != rep.Command ||
		*back.Config != *rep.Config || len(back.Results[0].Missing) != 1 {
		t.Errorf("ReadJSON lost what the rule reads: %+v vs %+v", back.Conformance(), rep.Conformance())
	}
	if _, err := ReadJSON(strings.NewReader(`{"schema":"other/v9"}`)); err == nil {
		t.Error("a report of another schema is refused")
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

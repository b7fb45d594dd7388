package chaosreport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/chaos"
)

// TestChaosReportWords: the chaos summary prints tallies and evidence as
// words and numbers, sorted, never Go's map[k:v] or [a b].
func TestChaosReportWords(t *testing.T) {
	two := 2
	var out bytes.Buffer
	Console(&out, chaos.Findings{Keys: 3, Ops: 3, Attempts: 9, Judged: 2, NotJudged: map[string]int{chaos.NotJudgedHarness: 1},
		Faults:   map[string]int{"duplicate": 74, "drop-response": 239},
		Outcomes: map[string]int{"ok": 2, "gave-up": 1, "fail": 3}, FailsByKind: map[string]int{"business": 2, "normal": 1},
		Violations: []chaos.KeyViolation{{Key: "k1", Rule: "double-execution", Kind: "charge", Detail: "two ids",
			IDs: []string{"a", "b"}, Statuses: []int{201, 201}, Oracle: &two}}})
	for _, want := range []string{
		"faults injected: drop-response 239, duplicate 74\n",
		"client outcomes: fail 3 (a final non-2xx answer: business 2, the business error variant's expected answer, e.g. 402; normal 1, not an expected answer), gave-up 1, ok 2 (a 2xx answer)\n",
		"exactly-once: 1 VIOLATIONS (double-execution 1) in 2 of 3 keys judged; 1 not judged: the harness dropped every answer 1\n",
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
	Console(&out, chaos.Findings{})
	if !strings.Contains(out.String(), "faults injected: none\n") {
		t.Errorf("no faults: want none:\n%s", out.String())
	}
}

// TestChaosCleanReportNoAlarm: a clean run's legal fresh executions
// (after the TTL) and keys not judged are shown as information: no line
// names a broken rule, and only violations do.
func TestChaosCleanReportNoAlarm(t *testing.T) {
	two := 2
	legal := chaos.KeyViolation{Key: "k1", Rule: chaos.RuleDoubleExecution, Kind: "normal", IDs: []string{"a", "b"}, Oracle: &two,
		Detail: "2 distinct created ids for one key, the later ones sent past the key's TTL (2s) − margin (500ms): the key may have expired, a legal fresh execution"}
	unjudged := chaos.KeyViolation{Key: "k2", Rule: chaos.RuleLost, Kind: "normal", IDs: []string{"c"}, Reason: chaos.NotJudgedHarness,
		Detail: "not judged: the harness dropped every answer (drop-response 3); the upstream created c, the client ended unknown"}
	var out bytes.Buffer
	Console(&out, chaos.Findings{Keys: 4, Ops: 4, Attempts: 9, Judged: 2, Executed: 4, Exercised: true,
		TTL: 2 * time.Second, Margin: 500 * time.Millisecond,
		NotJudged: map[string]int{chaos.NotJudgedAfterTTL: 1, chaos.NotJudgedHarness: 1},
		AfterTTL:  []chaos.KeyViolation{legal}, Unjudged: []chaos.KeyViolation{unjudged}})
	text := out.String()
	for _, alarm := range []string{chaos.RuleDoubleExecution, chaos.RuleLost + " ", "VIOLATION"} {
		if strings.Contains(text, alarm) {
			t.Errorf("a clean run prints %q, which reads as a violation:\n%s", alarm, text)
		}
	}
	for _, want := range []string{
		"  fresh execution after the TTL key=k1 kind=normal: 2 distinct created ids",
		"  not judged (the harness dropped every answer) key=k2 kind=normal: the harness dropped every answer (drop-response 3)",
		"exactly-once: OK: 0 violations",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	out.Reset()
	Console(&out, chaos.Findings{Keys: 1, Judged: 1, Exercised: true, Violations: []chaos.KeyViolation{legal}})
	if !strings.Contains(out.String(), "  double-execution key=k1") {
		t.Errorf("a violation names its rule:\n%s", out.String())
	}
	out.Reset()
	Console(&out, chaos.Findings{Ops: 2, Outcomes: map[string]int{chaos.ClientFail: 2}, FailsByKind: map[string]int{chaos.KindBusiness: 1, chaos.KindTransient: 1}})
	if want := "client outcomes: fail 2 (final non-2xx answers, all expected: business 1, "; !strings.Contains(out.String(), want) {
		t.Errorf("expected error answers are said to be expected: want %q in\n%s", want, out.String())
	}
}

package suite_test

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/suite"
	"github.com/idemcheck/idemcheck/wire"
)

// TestConformMatcher checks the matcher's verdicts and that its failure
// message carries the evidence a reader needs.
func TestConformMatcher(t *testing.T) {
	res := func(s scenarios.Status, level scenarios.Level) scenarios.Result {
		return scenarios.Result{Meta: scenarios.Meta{ID: "replay/one-execution", Family: "replay", Level: level,
			Requirements: []string{"IK-REPLAY-3"}, Requirement: "N replays cause exactly one side effect."},
			Operation: "charges", Status: s, Expected: "1 execution", Observed: "2 executions",
			Exchanges: []wire.Exchange{{Label: "first", Request: wire.ExchangeRequest{Method: "POST", URL: "http://127.0.0.1:9/v1/charges"}}}}
	}
	for _, tc := range []struct {
		name, rule string
		status     scenarios.Status
		level      scenarios.Level
		strict     bool
		match      bool
	}{
		{"pass", "a pass conforms", scenarios.Pass, scenarios.Must, false, true},
		{"fail", "a fail does not conform", scenarios.Fail, scenarios.Must, false, false},
		{"warn", "an unmet SHOULD conforms outside strict mode", scenarios.Warn, scenarios.Should, false, true},
		{"warn-strict", "an unmet SHOULD fails under -strict", scenarios.Warn, scenarios.Should, true, false},
		{"warn-must", "a MUST that warns fails, strict or not", scenarios.Warn, scenarios.Must, false, false},
		{"skip", "a skip does not fail the run", scenarios.Skip, scenarios.Must, false, true},
		{"unverifiable-must", "a MUST without evidence fails the run", scenarios.Unverifiable, scenarios.Must, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := suite.Conform(tc.strict)
			ok, err := m.Match(res(tc.status, tc.level))
			if err != nil || ok != tc.match {
				t.Fatalf("rule: %s: got match=%t err=%v", tc.rule, ok, err)
			}
		})
	}
	msg := suite.Conform(false).FailureMessage(res(scenarios.Fail, scenarios.Must))
	for _, want := range []string{"replay/one-execution@charges", "N replays cause exactly one side effect.",
		"expected:    1 execution", "observed:    2 executions", "#1 first: POST http://127.0.0.1:9/v1/charges", "reproduce: curl"} {
		if !strings.Contains(msg, want) {
			t.Errorf("rule: the failure message shows the evidence: missing %q in\n%s", want, msg)
		}
	}
	if _, err := suite.Conform(false).Match("not a result"); err == nil {
		t.Error("rule: matching something other than a Result is an error, not a verdict")
	}
}

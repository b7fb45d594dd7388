package idemchecktest

import (
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

// TestDecide: how each verdict shows in go test, one rule per row.
func TestDecide(t *testing.T) {
	res := func(s scenarios.Status, l scenarios.Level, known bool) scenarios.Result {
		return scenarios.Result{Meta: scenarios.Meta{ID: "replay/one-execution", Family: "replay", Level: l,
			Requirements: []string{"IK-REPLAY-3"}, Requirement: "N replays cause exactly one side effect."},
			Operation: "charges", Status: s, Expected: "1 execution", Observed: "2 executions", Reason: "why",
			KnownFailing: known,
			Exchanges:    []wire.Exchange{{Label: "first", Request: wire.ExchangeRequest{Method: "POST", URL: "http://127.0.0.1:9/v1/charges"}}}}
	}
	const (
		pass = iota
		fail
		skip
	)
	for _, tc := range []struct {
		rule                    string
		status                  scenarios.Status
		level                   scenarios.Level
		known, strict, allowInc bool
		want                    int
		text                    string // in the decision's text
	}{
		{"a pass passes", scenarios.Pass, scenarios.Must, false, false, false, pass, ""},
		{"a fail fails with the spec sentence, expected vs observed and curl", scenarios.Fail, scenarios.Must, false, false, false, fail, "reproduce: curl"},
		{"an unmet SHOULD passes outside strict, with its evidence logged", scenarios.Warn, scenarios.Should, false, false, false, pass, "SHOULD unmet"},
		{"an unmet SHOULD fails under Strict", scenarios.Warn, scenarios.Should, false, true, false, fail, "idemchecktest.Strict()"},
		{"a MUST that warns fails, strict or not", scenarios.Warn, scenarios.Must, false, false, false, fail, "MUST-level warning"},
		{"a skip skips with its reason", scenarios.Skip, scenarios.Must, false, false, false, skip, "skip: why"},
		{"a MUST without evidence fails (the CLI exits 5), saying so in a test's words", scenarios.Unverifiable, scenarios.Must, false, false, false, fail, "idemchecktest.AllowIncomplete()"},
		{"a MUST without evidence skips under AllowIncomplete", scenarios.Inconclusive, scenarios.Must, false, false, true, skip, "inconclusive: why"},
		{"a SHOULD without evidence skips", scenarios.Unverifiable, scenarios.Should, false, false, false, skip, "unverifiable: why"},
		{"an interrupted instance fails: nothing was judged", scenarios.Interrupted, scenarios.Must, false, false, false, fail, "why"},
		{"a known failure skips as expected", scenarios.Fail, scenarios.Must, true, false, false, skip, "failed as expected"},
		{"a known failure that passes fails: the list cannot go stale", scenarios.Pass, scenarios.Must, true, false, false, fail, "remove it from the list"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			d := Decide(&scenarios.Report{Strict: tc.strict, AllowIncomplete: tc.allowInc}, res(tc.status, tc.level, tc.known))
			got := pass
			switch {
			case d.Fail && d.Skip:
				t.Fatalf("both fail and skip: %+v", d)
			case d.Fail:
				got = fail
			case d.Skip:
				got = skip
			}
			if got != tc.want || !strings.Contains(d.Text, tc.text) {
				t.Errorf("rule: %s: got %+v", tc.rule, d)
			}
			for _, cli := range []string{"exit 5", "--allow-incomplete", "--strict", "JSON report"} {
				if strings.Contains(d.Text, cli) {
					t.Errorf("rule: a test speaks of its own options, not the CLI's: %q in %q", cli, d.Text)
				}
			}
			if d.Fail && !strings.Contains(d.Text, "N replays cause exactly one side effect.") {
				t.Errorf("rule: a failure names the spec sentence: %q", d.Text)
			}
		})
	}
}

// TestEscapeGlob: an instance name selects exactly itself, whatever
// characters an operation name carries.
func TestEscapeGlob(t *testing.T) {
	for _, name := range []string{"replay/same-status@charges", "replay/x@a*b", "replay/x@[v1]{y}", `replay/x@back\slash`, "replay/x@q?"} {
		g := escapeGlob(name)
		if ok, err := doublestar.Match(g, name); !ok || err != nil {
			t.Errorf("%q: glob %q does not match it (%v)", name, g, err)
		}
		if ok, _ := doublestar.Match(g, name+"x"); ok {
			t.Errorf("%q: glob %q matches another name", name, g)
		}
	}
}

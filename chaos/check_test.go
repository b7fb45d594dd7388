package chaos_test

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/chaos"
)

func intp(n int) *int { return &n }

// Each rule of the checker, on a hand-written history: what it must flag
// and what it must let pass.
func TestChecker(t *testing.T) {
	ok := func(id string) chaos.Upstream { return chaos.Upstream{Status: 201, ID: id} }
	attempt := func(n int, body string, up ...chaos.Upstream) chaos.Event {
		return chaos.Event{Type: "attempt", Key: "k", Attempt: n, RequestSHA256: body, Upstream: up}
	}
	cases := []struct {
		name, explanation string
		attempts          []chaos.Event
		op                *chaos.Op
		rule              string // "" = clean
	}{
		{"replayed after drop", "one id committed, replayed to the retry, oracle 1",
			[]chaos.Event{attempt(1, "a", ok("x")), attempt(2, "a", ok("x"))},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientOK, Status: 201, ID: "x", Oracle: intp(1)}, ""},
		{"re-executed", "two ids under one key",
			[]chaos.Event{attempt(1, "a", ok("x")), attempt(2, "a", ok("y"))}, nil, chaos.RuleDoubleExecution},
		{"oracle counts two", "ids agree but the oracle counts 2 executions",
			[]chaos.Event{attempt(1, "a", ok("x"))},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientOK, ID: "x", Oracle: intp(2)}, chaos.RuleDoubleExecution},
		{"changed body replayed", "a different body got a 2xx under the same key",
			[]chaos.Event{attempt(1, "a", ok("x")), attempt(2, "b", ok("x"))}, nil, chaos.RuleFingerprintIgnored},
		{"changed body rejected", "a different body got 422: fine",
			[]chaos.Event{attempt(1, "a", ok("x")), attempt(2, "b", chaos.Upstream{Status: 422})},
			&chaos.Op{Key: "k", Kind: chaos.KindMutated, Outcome: chaos.ClientFail, Status: 422, Oracle: intp(1)}, ""},
		{"lost", "committed upstream, the client gave up unknowing",
			[]chaos.Event{attempt(1, "a", ok("x"))},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientUnknown, Oracle: intp(1)}, chaos.RuleLost},
		{"wrong answer", "the client ended with another id than the committed one",
			[]chaos.Event{attempt(1, "a", ok("x"))},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientOK, ID: "y"}, chaos.RuleDoubleExecution},
		{"business error replayed", "402 then 402",
			[]chaos.Event{attempt(1, "a", chaos.Upstream{Status: 402}), attempt(2, "a", chaos.Upstream{Status: 402})},
			&chaos.Op{Key: "k", Kind: chaos.KindBusiness, Outcome: chaos.ClientFail, Status: 402, Oracle: intp(1)}, ""},
		{"business error lost", "the client ended with a different final status",
			[]chaos.Event{attempt(1, "a", chaos.Upstream{Status: 402})},
			&chaos.Op{Key: "k", Kind: chaos.KindBusiness, Outcome: chaos.ClientFail, Status: 400, Oracle: intp(1)}, chaos.RuleWrongAnswer},
		{"5xx re-executed", "three 503s, three executions",
			[]chaos.Event{attempt(1, "a", chaos.Upstream{Status: 503}), attempt(2, "a", chaos.Upstream{Status: 503}), attempt(3, "a", chaos.Upstream{Status: 503})},
			&chaos.Op{Key: "k", Kind: chaos.KindTransient, Outcome: chaos.ClientFail, Status: 503, Oracle: intp(3)}, ""},
		{"5xx replayed", "three 503s, one execution",
			[]chaos.Event{attempt(1, "a", chaos.Upstream{Status: 503}), attempt(2, "a", chaos.Upstream{Status: 503}), attempt(3, "a", chaos.Upstream{Status: 503})},
			&chaos.Op{Key: "k", Kind: chaos.KindTransient, Outcome: chaos.ClientFail, Status: 503, Oracle: intp(1)}, chaos.RuleErrorReplayed},
	}
	for _, tc := range cases {
		c := chaos.NewChecker()
		for _, ev := range tc.attempts {
			c.Attempt(ev)
		}
		if tc.op != nil {
			c.Op(*tc.op)
		}
		rep := c.Report()
		var rules []string
		for _, v := range rep.Violations {
			rules = append(rules, v.Rule)
		}
		switch {
		case tc.rule == "" && len(rules) > 0:
			t.Errorf("%s (%s): violations %v, want none", tc.name, tc.explanation, rep.Violations)
		case tc.rule != "" && !strings.Contains(strings.Join(rules, ","), tc.rule):
			t.Errorf("%s (%s): rules %v, want %s", tc.name, tc.explanation, rules, tc.rule)
		}
	}
}

package scenarios

import (
	"slices"
	"strings"
	"testing"
)

// TestJudge: the one rule that decides a run, one row per rule. Exit codes
// rank interrupted (130) over fail (1) over incomplete (5) over pass (0).
func TestJudge(t *testing.T) {
	res := func(id string, level Level, s Status, known bool) Result {
		return Result{Meta: Meta{ID: id, Level: level}, Status: s, KnownFailing: known, Reason: "why"}
	}
	cases := []struct {
		name, rule            string
		strict, allow, intr   bool
		rs                    []Result
		want                  RunOutcome
		problems, noEvidences int
	}{
		{"pass", "a pass passes", false, false, false, []Result{res("a/b", Must, Pass, false)}, OutcomePass, 0, 0},
		{"fail", "a failure fails", false, false, false, []Result{res("a/b", Must, Fail, false)}, OutcomeFail, 1, 0},
		{"warn", "an unmet SHOULD only warns", false, false, false, []Result{res("a/b", Should, Warn, false)}, OutcomePass, 0, 0},
		{"must warn", "a MUST that warns fails the run: a MUST unmet never passes", false, false, false, []Result{res("a/b", Must, Warn, false)}, OutcomeFail, 1, 0},
		{"warn strict", "--strict makes an unmet SHOULD fail", true, false, false, []Result{res("a/b", Should, Warn, false)}, OutcomeFail, 1, 0},
		{"info warn strict", "an informational case never fails", true, false, false, []Result{res("a/b", Info, Warn, false)}, OutcomePass, 0, 0},
		{"known failing fails", "an announced failure does not fail the run", false, false, false, []Result{res("a/b", Must, Fail, true)}, OutcomePass, 0, 0},
		{"known failing warns strict", "an announced warning is expected under --strict too", true, false, false, []Result{res("a/b", Should, Warn, true)}, OutcomePass, 0, 0},
		{"known failing passes", "a stale known-failing entry fails the run", false, false, false, []Result{res("a/b", Must, Pass, true)}, OutcomeFail, 1, 0},
		{"skip", "a skip (config lacks it, profile leaves it open) never holds a run back", false, false, false, []Result{res("a/b", Must, Skip, false)}, OutcomePass, 0, 0},
		{"must unverifiable", "a MUST without an oracle is not enough evidence", false, false, false, []Result{res("a/b", Must, Unverifiable, false)}, OutcomeIncomplete, 0, 1},
		{"must inconclusive", "a MUST whose overlap could not be made is not enough evidence", false, false, false, []Result{res("a/b", Must, Inconclusive, false)}, OutcomeIncomplete, 0, 1},
		{"must inconclusive allowed", "--allow-incomplete accepts a MUST without evidence", false, true, false, []Result{res("a/b", Must, Inconclusive, false)}, OutcomePass, 0, 0},
		{"should inconclusive", "a SHOULD without evidence does not hold the run back", false, false, false, []Result{res("a/b", Should, Inconclusive, false)}, OutcomePass, 0, 0},
		{"fail beats incomplete", "a failure outranks missing evidence", false, false, false,
			[]Result{res("a/b", Must, Unverifiable, false), res("a/c", Must, Fail, false)}, OutcomeFail, 1, 1},
		{"interrupted beats fail", "an interrupted run is interrupted whatever it saw", false, false, true,
			[]Result{res("a/b", Must, Fail, false), res("a/c", Must, Interrupted, false)}, OutcomeInterrupted, 1, 0},
	}
	for _, c := range cases {
		rep := &Report{Strict: c.strict, AllowIncomplete: c.allow, Interrupted: c.intr, Results: c.rs}
		j := rep.Judge()
		if j.Outcome != c.want || len(j.Problems) != c.problems || len(j.WithoutEvidence) != c.noEvidences {
			t.Errorf("%s: rule: %s: got %s %v %v, want %s with %d problems, %d without evidence",
				c.name, c.rule, j.Outcome, j.Problems, j.WithoutEvidence, c.want, c.problems, c.noEvidences)
		}
		ok, problems := rep.Outcome()
		if ok != (c.want == OutcomePass) || len(problems) != c.problems+c.noEvidences {
			t.Errorf("%s: Outcome ok=%t %v disagrees with Judge", c.name, ok, problems)
		}
	}
	for o, code := range map[RunOutcome]int{OutcomePass: 0, OutcomeFail: 1, OutcomeIncomplete: 5, OutcomeInterrupted: 130} {
		if o.ExitCode() != code {
			t.Errorf("%s: exit %d, want %d", o, o.ExitCode(), code)
		}
	}
}

// TestRequirements: requirements are counted once per level by their
// worst instance, not per instance.
func TestRequirements(t *testing.T) {
	r := func(level Level, s Status, reqs ...string) Result {
		return Result{Meta: Meta{ID: "f/" + strings.Join(reqs, "+"), Level: level, Requirements: reqs}, Status: s}
	}
	rep := &Report{Results: []Result{
		r(Must, Pass, "IK-A"), r(Must, Pass, "IK-A"), // two instances, one requirement: verified
		r(Must, Pass, "IK-B"), r(Must, Fail, "IK-B"), // a failing instance violates it
		r(Must, Pass, "IK-C"), r(Must, Inconclusive, "IK-C"), // a pass does not make up for a missing one
		r(Must, Skip, "IK-D"), // only skipped: not tested
		{Meta: Meta{ID: "outbox/x", Level: Must, Requirements: []string{"IK-OUTBOX-1"}}, Status: Skip, Missing: []Need{NeedEvents}}, // opt-in, not asked for: apart
		r(Must, Interrupted, "IK-E", "IK-F"),                    // each cited requirement counts
		r(Should, Warn, "IK-A"),                                 // same ID at another level counts there
		{Meta: Meta{ID: "f/bare", Level: Should}, Status: Pass}, // no citation: the case ID stands in
	}}
	got := rep.Requirements()
	want := map[Level]RequirementCounts{
		Must:   {Verified: 1, Violated: 1, WithoutEvidence: 3, NotTested: 1, OptIn: 1},
		Should: {Verified: 1, Violated: 1},
	}
	if len(got) != len(want) || got[Must] != want[Must] || got[Should] != want[Should] {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if ids := rep.OptInRequirements(Must); !slices.Equal(ids, []string{"IK-OUTBOX-1"}) {
		t.Errorf("opt-in MUSTs %v, want [IK-OUTBOX-1]", ids)
	}
}

// TestRequireMust: under RequireMust a MUST requirement no instance
// tested holds the run back (exit 5), one line each; a skipped MUST whose
// requirement another instance verified does not; a failure still wins.
func TestRequireMust(t *testing.T) {
	skip := Result{Meta: Meta{ID: "scope/other-user-isolated", Level: Must, Requirements: []string{"IK-SCOPE-1"}}, Status: Skip, Missing: []Need{NeedSecondPrincipal}}
	pass := Result{Meta: Meta{ID: "replay/single-execution", Level: Must, Requirements: []string{"IK-REPLAY-3"}}, Status: Pass}
	rep := &Report{Results: []Result{pass, skip}}
	if j := rep.Judge(); j.Outcome != OutcomePass || len(j.Untested) != 0 {
		t.Errorf("without --require-must an untested MUST is only listed: %+v", j)
	}
	rep.RequireMust = true
	if j := rep.Judge(); j.Outcome != OutcomeIncomplete || len(j.Untested) != 1 || !strings.Contains(j.Untested[0], "IK-SCOPE-1 scope/other-user-isolated: needs second-principal") {
		t.Errorf("--require-must: an untested MUST is exit 5, named: %+v", j)
	}
	covered := skip
	covered.Requirements = []string{"IK-REPLAY-3"}
	rep.Results = []Result{pass, covered}
	if j := rep.Judge(); j.Outcome != OutcomePass {
		t.Errorf("a skipped instance of a verified requirement is not untested: %+v", j)
	}
	rep.Results = []Result{{Meta: Meta{ID: "a/b", Level: Must}, Status: Fail}, skip}
	if j := rep.Judge(); j.Outcome != OutcomeFail {
		t.Errorf("a failure beats an untested MUST: %+v", j)
	}
}

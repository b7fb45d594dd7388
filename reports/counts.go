package reports

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/reports/internal/words"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Counts tallies a report's effective verdicts (see Effective).
type Counts struct {
	Passed       int `json:"passed"`
	Failed       int `json:"failed"`
	Warned       int `json:"warned"`
	Skipped      int `json:"skipped"`
	Unverifiable int `json:"unverifiable"`
	Inconclusive int `json:"inconclusive"`
	// Interrupted: instances cut short or never started because the run
	// was interrupted.
	Interrupted int `json:"interrupted"`
	// ExpectedFailures are failures listed in the known-failing file;
	// they do not fail the run.
	ExpectedFailures int `json:"expected_failures"`
}

// Total is the number of results counted.
func (c Counts) Total() int {
	return c.Passed + c.Failed + c.Warned + c.Skipped + c.Unverifiable + c.Inconclusive + c.Interrupted + c.ExpectedFailures
}

// Verdict is a result's status once the run's rules are applied.
type Verdict = scenarios.Effective

// Effective applies the run-level rules to one result; the rules live in
// scenarios.Report.Effective, which also decides the run's outcome.
func Effective(rep *scenarios.Report, r scenarios.Result) Verdict { return rep.Effective(r) }

// Tally counts the report's effective verdicts.
func Tally(rep *scenarios.Report) Counts {
	var c Counts
	for _, r := range rep.Results {
		v := rep.Effective(r)
		switch {
		case v.Expected:
			c.ExpectedFailures++
		case v.Status == scenarios.Pass:
			c.Passed++
		case v.Status == scenarios.Fail:
			c.Failed++
		case v.Status == scenarios.Warn:
			c.Warned++
		case v.Status == scenarios.Skip:
			c.Skipped++
		case v.Status == scenarios.Unverifiable:
			c.Unverifiable++
		case v.Status == scenarios.Inconclusive:
			c.Inconclusive++
		case v.Status == scenarios.Interrupted:
			c.Interrupted++
		}
	}
	return c
}

// Failures returns the results that fail the run, in report order: the
// results behind scenarios.Report.Judge's problems.
func Failures(rep *scenarios.Report) []scenarios.Result {
	return selectResults(rep, func(v Verdict) bool { return v.Status == scenarios.Fail && !v.Expected })
}

// WithoutEvidence returns the MUST-level results that ended unverifiable
// or inconclusive and so hold the run back (exit 5), in report order.
func WithoutEvidence(rep *scenarios.Report) []scenarios.Result {
	return selectResults(rep, func(v Verdict) bool { return v.Incomplete })
}

func selectResults(rep *scenarios.Report, keep func(Verdict) bool) []scenarios.Result {
	var out []scenarios.Result
	for _, r := range rep.Results {
		if keep(rep.Effective(r)) {
			out = append(out, r)
		}
	}
	return out
}

// outcomeText says the run's outcome in words, with its exit code.
func outcomeText(o scenarios.RunOutcome) string {
	text := map[scenarios.RunOutcome]string{
		scenarios.OutcomePass:        "pass",
		scenarios.OutcomeFail:        "fail",
		scenarios.OutcomeIncomplete:  words.NotEnoughEvidence,
		scenarios.OutcomeInterrupted: "interrupted",
	}[o]
	return fmt.Sprintf("%s (exit %d)", text, o.ExitCode())
}

// requirementLines are "MUST: N requirements verified, N violated (by K
// case instances), N without evidence" and the same for SHOULD; a level
// with untested requirements says so. The instances tie the count to the
// "N failed" line above: one case citing three requirements violates
// three.
func requirementLines(rep *scenarios.Report) []string {
	reqs := rep.Requirements()
	var out []string
	for _, l := range []scenarios.Level{scenarios.Must, scenarios.Should} {
		c := reqs[l]
		by := ""
		if c.Violated > 0 {
			by = " (by " + plural(violatingInstances(rep, l), "case instance") + ")"
		}
		line := fmt.Sprintf("%s: %s verified, %d violated%s, %d without evidence", l, plural(c.Verified, "requirement"), c.Violated, by, c.WithoutEvidence)
		if c.NotTested > 0 {
			line += fmt.Sprintf(", %d not tested", c.NotTested)
		}
		if c.OptIn > 0 {
			line += fmt.Sprintf(" (%d opt-in not asked for: %s)", c.OptIn, strings.Join(rep.OptInRequirements(l), ", "))
		}
		out = append(out, line)
	}
	return out
}

// violatingInstances counts the results of level l that violate their
// requirements (failed or warned, an expected failure included), as
// Report.Requirements counts them.
func violatingInstances(rep *scenarios.Report, l scenarios.Level) int {
	n := 0
	for _, r := range rep.Results {
		if r.Level == l && (r.Status == scenarios.Fail || r.Status == scenarios.Warn) {
			n++
		}
	}
	return n
}

// plural is "1 thing" or "N things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// family groups results by family in first-seen order, keeping the
// report's order inside a family.
type family struct {
	Name    string
	Results []scenarios.Result
}

func byFamily(rep *scenarios.Report) []family {
	var fams []family
	idx := map[string]int{}
	for _, r := range rep.Results {
		i, ok := idx[r.Family]
		if !ok {
			i = len(fams)
			idx[r.Family] = i
			fams = append(fams, family{Name: r.Family})
		}
		fams[i].Results = append(fams[i].Results, r)
	}
	return fams
}

// conformanceText says the run's level in one line: the level, then what
// blocks the next one (at core, in plain words: what the config and
// profile leave untested), or why no level is claimed.
func conformanceText(rep *scenarios.Report, c scenarios.Conformance) string {
	switch {
	case c.Level == scenarios.LevelCore && c.Blocker != "":
		return fmt.Sprintf("%s (%d/%d MUST, %d/%d SHOULD verified); %s", c.Level, c.Must.Verified, c.Must.Total, c.Should.Verified, c.Should.Total, nextLevelText(rep, c))
	case c.Level == scenarios.LevelNone || c.Level == scenarios.LevelNotConformant:
		if c.Blocker != "" && c.Level == scenarios.LevelNotConformant {
			return c.Level + ": " + c.Blocker
		}
		return c.Level + ": " + c.Why
	case c.Blocker != "":
		return fmt.Sprintf("%s (%s blocked by %s)", c.Level, scenarios.LevelFull, c.Blocker)
	}
	return c.Level
}

// untestedLines list the MUSTs the run did not test, each with the one
// config line that would test it.
func untestedLines(rep *scenarios.Report) []string {
	var out []string
	for _, u := range rep.UntestedMust() {
		line := u.Instance + ": " + u.Reason
		if u.Requirement != "" {
			line = u.Requirement + " " + line
		}
		if u.Hint != "" {
			line += "; add " + u.Hint
		}
		out = append(out, line)
	}
	return out
}

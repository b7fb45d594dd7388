// Package reports writes a scenarios.Report for people and machines: a
// console tree, JUnit XML, versioned JSON and a Markdown CI summary.
// Every writer shows the same verdicts: a case that failed shows its
// requirement sentence, expected vs observed, the exchanges and a curl
// reproduction.
package reports

import "github.com/idemcheck/idemcheck/scenarios"

// Counts tallies a report's effective verdicts (see Effective).
type Counts struct {
	Passed       int `json:"passed"`
	Failed       int `json:"failed"`
	Warned       int `json:"warned"`
	Skipped      int `json:"skipped"`
	Unverifiable int `json:"unverifiable"`
	Inconclusive int `json:"inconclusive"`
	// ExpectedFailures are failures listed in the known-failing file;
	// they do not fail the run.
	ExpectedFailures int `json:"expected_failures"`
}

// Total is the number of results counted.
func (c Counts) Total() int {
	return c.Passed + c.Failed + c.Warned + c.Skipped + c.Unverifiable + c.Inconclusive + c.ExpectedFailures
}

// Verdict is a result's status once the run's rules are applied.
type Verdict struct {
	Status scenarios.Status
	// Expected: a failure the known-failing list announced.
	Expected bool
	// Note says why the status differs from the case's own, if it does.
	Note string
}

// Effective applies the run-level rules to one result: under --strict a
// warning fails; a known-failing case that fails is an expected failure;
// a known-failing case that passes fails the run, so the list cannot go
// stale.
func Effective(rep *scenarios.Report, r scenarios.Result) Verdict {
	switch {
	case r.Status == scenarios.Warn && rep.Strict && r.Level != scenarios.Info:
		return Verdict{Status: scenarios.Fail, Note: "SHOULD unmet; --strict makes it a failure"}
	case r.KnownFailing && (r.Status == scenarios.Fail || r.Status == scenarios.Warn):
		return Verdict{Status: scenarios.Fail, Expected: true, Note: "failed as expected (known-failing list)"}
	case r.KnownFailing && r.Status == scenarios.Pass:
		return Verdict{Status: scenarios.Fail, Note: "listed as known-failing but passed: remove it from the list"}
	}
	return Verdict{Status: r.Status}
}

// Tally counts the report's effective verdicts.
func Tally(rep *scenarios.Report) Counts {
	var c Counts
	for _, r := range rep.Results {
		v := Effective(rep, r)
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
		}
	}
	return c
}

// Failures returns the results that fail the run, in report order: the
// results behind scenarios.Report.Outcome's problems.
func Failures(rep *scenarios.Report) []scenarios.Result {
	var out []scenarios.Result
	for _, r := range rep.Results {
		if v := Effective(rep, r); v.Status == scenarios.Fail && !v.Expected {
			out = append(out, r)
		}
	}
	return out
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

package reports

import (
	"fmt"

	"github.com/idemcheck/idemcheck/scenarios"
)

// Compare sets a run against an expected report (Autobahn-style): worse
// lists the instances whose effective verdict ranks worse than expected
// (an instance the expected report lacks is expected to pass; one the
// run lacks is worse, "not run"), better the ones that improved. Each
// line is "name: expected X, got Y".
func Compare(expected, got *scenarios.Report) (worse, better []string) {
	want := map[string]Verdict{}
	for _, r := range expected.Results {
		want[r.Name()] = expected.Effective(r)
	}
	seen := map[string]bool{}
	for _, r := range got.Results {
		seen[r.Name()] = true
		v := got.Effective(r)
		w, ok := want[r.Name()]
		if !ok {
			w = Verdict{Status: scenarios.Pass}
		}
		line := fmt.Sprintf("%s: expected %s, got %s", r.Name(), verdictWord(w), verdictWord(v))
		switch {
		case rank(v) > rank(w):
			worse = append(worse, line)
		case rank(v) < rank(w):
			better = append(better, line)
		}
	}
	for _, r := range expected.Results {
		if !seen[r.Name()] {
			worse = append(worse, fmt.Sprintf("%s: expected %s, not run", r.Name(), verdictWord(want[r.Name()])))
		}
	}
	return worse, better
}

// verdictWord names an effective verdict: its status, "failed as
// expected" for a known failure, "MUST without evidence" for one that
// holds the run back.
func verdictWord(v Verdict) string {
	switch {
	case v.Expected:
		return "failed as expected"
	case v.Incomplete:
		return string(v.Status) + " (MUST without evidence)"
	}
	return string(v.Status)
}

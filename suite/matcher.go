package suite

import (
	"fmt"

	"github.com/onsi/gomega/types"

	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Conform matches a scenarios.Result that does not fail the run under the
// run-outcome rule (idemchecktest.Decide): a pass, a skip, an unmet
// SHOULD (warn) when strict is off, an unverifiable or inconclusive
// result below MUST. Its failure message is the full evidence:
// requirement sentence, expected vs observed, every exchange with a curl
// reproduction.
func Conform(strict bool) types.GomegaMatcher { return conformMatcher{strict: strict} }

type conformMatcher struct{ strict bool }

func (m conformMatcher) decide(actual any) (scenarios.Result, idemchecktest.Decision, error) {
	r, ok := actual.(scenarios.Result)
	if !ok {
		return r, idemchecktest.Decision{}, fmt.Errorf("Conform expects a scenarios.Result, got %T", actual)
	}
	return r, idemchecktest.Decide(&scenarios.Report{Strict: m.strict}, r), nil
}

func (m conformMatcher) Match(actual any) (bool, error) {
	_, d, err := m.decide(actual)
	return err == nil && !d.Fail, err
}

func (m conformMatcher) FailureMessage(actual any) string {
	_, d, err := m.decide(actual)
	if err != nil {
		return err.Error()
	}
	return "Expected the target to conform:\n" + d.Text
}

func (m conformMatcher) NegatedFailureMessage(actual any) string {
	r, _, err := m.decide(actual)
	if err != nil {
		return err.Error()
	}
	return "Expected the target not to conform, but " + r.Name() + " is " + string(r.Status)
}

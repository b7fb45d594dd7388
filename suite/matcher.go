package suite

import (
	"fmt"

	"github.com/onsi/gomega/types"

	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Conform matches a scenarios.Result that does not fail the run: a pass,
// or an unmet SHOULD (warn) when strict is off. Its failure message is the
// full evidence: requirement sentence, expected vs observed, every
// exchange with a curl reproduction.
func Conform(strict bool) types.GomegaMatcher { return conformMatcher{strict: strict} }

type conformMatcher struct{ strict bool }

func (m conformMatcher) verdict(actual any) (scenarios.Result, reports.Verdict, error) {
	r, ok := actual.(scenarios.Result)
	if !ok {
		return r, reports.Verdict{}, fmt.Errorf("Conform expects a scenarios.Result, got %T", actual)
	}
	return r, reports.Effective(&scenarios.Report{Strict: m.strict}, r), nil
}

func (m conformMatcher) Match(actual any) (bool, error) {
	_, v, err := m.verdict(actual)
	if err != nil {
		return false, err
	}
	return v.Status == scenarios.Pass || v.Status == scenarios.Warn, nil
}

func (m conformMatcher) FailureMessage(actual any) string {
	r, v, err := m.verdict(actual)
	if err != nil {
		return err.Error()
	}
	msg := "Expected the target to conform:\n" + reports.FailureText(r, "  ")
	if v.Note != "" {
		msg += "  note:        " + v.Note + "\n"
	}
	return msg
}

func (m conformMatcher) NegatedFailureMessage(actual any) string {
	r, _, err := m.verdict(actual)
	if err != nil {
		return err.Error()
	}
	return "Expected the target not to conform, but " + r.Name() + " is " + string(r.Status)
}

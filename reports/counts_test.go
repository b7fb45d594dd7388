package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/scenarios"
)

// TestRequirementLinesSayWhichInstances: one failed case citing three MUST
// requirements reads "3 violated (by 1 case instance)", so the summary's
// "1 failed" and the requirement count agree on their face.
func TestRequirementLinesSayWhichInstances(t *testing.T) {
	rep := &scenarios.Report{Target: "http://127.0.0.1:9", Profile: "ietf", Results: []scenarios.Result{
		{Meta: scenarios.Meta{ID: "a/three", Family: "a", Level: scenarios.Must, Requirements: []string{"IK-A-1", "IK-A-2", "IK-A-3"}}, Operation: "charges", Status: scenarios.Fail},
		{Meta: scenarios.Meta{ID: "a/fine", Family: "a", Level: scenarios.Must, Requirements: []string{"IK-A-4"}}, Operation: "charges", Status: scenarios.Pass},
		{Meta: scenarios.Meta{ID: "b/two", Family: "b", Level: scenarios.Should, Requirements: []string{"IK-B-1"}}, Operation: "charges", Status: scenarios.Warn},
		{Meta: scenarios.Meta{ID: "b/two", Family: "b", Level: scenarios.Should, Requirements: []string{"IK-B-1"}}, Operation: "refunds", Status: scenarios.Fail},
	}}
	var b bytes.Buffer
	if err := Console(&b, rep, ConsoleOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\n1 passed, 2 failed, 1 warned, 0 skipped\n",
		"\nMUST: 1 requirement verified, 3 violated (by 1 case instance), 0 without evidence\n",
		"\nSHOULD: 0 requirements verified, 1 violated (by 2 case instances), 0 without evidence\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}

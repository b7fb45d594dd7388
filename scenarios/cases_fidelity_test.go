package scenarios_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestFidelityAndCrashProbes: the fidelity and crash families pass the
// correct reference and catch, each exactly where it should, the defects
// users of idempotency libraries report most.
func TestFidelityAndCrashProbes(t *testing.T) {
	rows := []struct {
		defect string
		want   []string // the case IDs that fail (warn counts: strict run)
	}{
		{"", nil},
		{"replay-as-200", []string{"fidelity/created-headers"}},
		{"replay-drops-headers", []string{"fidelity/created-headers"}},
		{"replay-joins-headers", []string{"fidelity/created-headers"}},
		{"replay-splits-headers", nil},
		{"replay-truncates-body", []string{"fidelity/large-body"}},
		{"replay-reencodes-body", []string{"fidelity/binary-body"}},
		{"failure-wedges-key", []string{"crash/handler-crash", "crash/handler-timeout"}},
		{"replay-coded-body", []string{"fidelity/content-coding"}},
	}
	targets := make([]*apispec.Target, len(rows))
	for i, row := range rows {
		if row.defect == "" {
			targets[i] = startDemo(t)
		} else {
			targets[i] = startDemo(t, row.defect)
		}
		targets[i].Operations = targets[i].Operations[:1]
	}
	reps := make([]*scenarios.Report, len(rows))
	errs := make([]error, len(rows))
	concurrently(len(rows), 4, func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		reps[i], errs[i] = scenarios.Run(ctx, targets[i], referenceProfile(t), scenarios.RunOptions{Strict: true, Run: []string{"fidelity/**", "crash/**"}})
	})
	for i, row := range rows {
		t.Run("defect="+row.defect, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			var got []string
			for _, r := range reps[i].Results {
				t.Logf("%s: %s %s %s", r.Name(), r.Status, r.Observed, r.Reason)
				switch r.Status {
				case scenarios.Fail, scenarios.Warn:
					got = append(got, r.ID)
				case scenarios.Pass:
				default:
					t.Errorf("%s: %s (%s), want every case decided", r.Name(), r.Status, r.Reason)
				}
			}
			slices.Sort(got)
			if len(reps[i].Results) != 6 || !slices.Equal(got, row.want) {
				t.Errorf("%d results, caught by %v, want %v", len(reps[i].Results), got, row.want)
			}
		})
	}
}

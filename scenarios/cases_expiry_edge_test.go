package scenarios_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestExpiryEdgeBurst: the sweep across the TTL edge passes on the correct
// reference and catches expired-row-blocks-claim, whose window (500 ms
// after the TTL) expiry/expired-key-burst, a grace after it, misses.
func TestExpiryEdgeBurst(t *testing.T) {
	for _, tc := range []struct {
		defect string
		want   map[string]scenarios.Status
	}{
		{"", map[string]scenarios.Status{"expiry/edge-burst": scenarios.Pass, "expiry/expired-key-burst": scenarios.Pass}},
		{string(reference.ExpiredRowBlocksClaim), map[string]scenarios.Status{"expiry/edge-burst": scenarios.Fail, "expiry/expired-key-burst": scenarios.Pass}},
	} {
		t.Run("defect="+tc.defect, func(t *testing.T) {
			t.Parallel()
			var defects []string
			if tc.defect != "" {
				defects = append(defects, tc.defect)
			}
			tg := startDemoTTL(t, 2*time.Second, defects...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"expiry/edge-burst@charges", "expiry/expired-key-burst@charges"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != len(tc.want) {
				t.Fatalf("%d results, want %d", len(rep.Results), len(tc.want))
			}
			for _, r := range rep.Results {
				t.Logf("%s: %s %s %s", r.Name(), r.Status, r.Observed, r.Reason)
				if r.Status != tc.want[r.ID] {
					t.Errorf("%s: %s, want %s", r.Name(), r.Status, tc.want[r.ID])
				}
			}
		})
	}
}

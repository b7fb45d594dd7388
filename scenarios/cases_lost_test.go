package scenarios_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// The LOST family through the in-process chaos proxy: the correct
// reference passes, and the defects a lost response exposes fail the case
// that names them.
func TestLostFamily(t *testing.T) {
	cases := []struct {
		defect      string
		explanation string
		fail        string // case ID that must fail; "" = all lost/* pass
	}{
		{"", "the correct reference replays the committed result after every lost response", ""},
		{"no-inflight-lock", "the storm retries execute while the dropped original is still running", "lost/retry-storm"},
		{"cancelled-result-write", "the hang-up cancels the result write, the claim is released and the retry executes again", "lost/client-hangup"},
	}
	for _, tc := range cases {
		t.Run("defect="+tc.defect, func(t *testing.T) {
			t.Parallel()
			var defects []string
			if tc.defect != "" {
				defects = append(defects, tc.defect)
			}
			tg := startDemo(t, defects...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"lost/**"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) == 0 {
				t.Fatal("no lost/* case ran")
			}
			failed := false
			for _, r := range rep.Results {
				if r.ID == tc.fail && r.Status == scenarios.Fail {
					failed = true
					continue
				}
				if r.Status != scenarios.Pass {
					t.Errorf("%s: %s: %s (expected %q, observed %q) %s", tc.explanation, r.Name(), r.Status, r.Expected, r.Observed, r.Reason)
				}
			}
			if tc.fail != "" && !failed {
				t.Errorf("%s: %s did not fail", tc.explanation, tc.fail)
			}
		})
	}
}

// LEASE-3 against the reference deployed with a lease (500 ms) shorter than
// its slow variant (1.5 s), declared as it really is: the reference presumes
// the owner dead once the lease ran out, so the late retry reclaims the key
// and executes a second time while the original still runs. The case must
// see that (an unmet SHOULD: warn). LEASE-1 says why it cannot run.
func TestLeaseSlowOutlivesLease(t *testing.T) {
	const lease = 500 * time.Millisecond
	app, err := demo.New(demo.Options{TTL: demoTTL, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	defer func() { srv.Close(); app.Close() }()
	tg, err := apispec.FromURL(srv.URL, demoTTL, lease)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"lease/**"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]scenarios.Status{"lease/slow-outlives-lease": scenarios.Warn, "lease/crash-recovers": scenarios.Skip}
	if len(rep.Results) != 4 {
		t.Fatalf("%d lease results, want 4 (2 cases x 2 operations)", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Status != want[r.ID] {
			t.Errorf("%s: %s, want %s (observed %q) %s", r.Name(), r.Status, want[r.ID], r.Observed, r.Reason)
		}
	}
}

package scenarios_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestErrorCachingFollowsProfile: the same server is right under one
// profile and wrong under another. A Stripe-style server that stores its
// 5xx (the reference with cache-5xx) passes where cache_5xx is true.
func TestErrorCachingFollowsProfile(t *testing.T) {
	rows := []struct {
		name    string
		defects []string
		profile func(*apispec.Profile)
		want    map[string]scenarios.Status
	}{
		{"5xx not cached, profile cache_5xx false", nil,
			func(p *apispec.Profile) { p.Cache5xx = apispec.No },
			map[string]scenarios.Status{"errors/transient-5xx": scenarios.Pass, "errors/failure-releases-key": scenarios.Pass}},
		{"5xx not cached, profile cache_5xx true", nil,
			func(p *apispec.Profile) { p.Cache5xx = apispec.Yes },
			map[string]scenarios.Status{"errors/transient-5xx": scenarios.Warn, "errors/failure-releases-key": scenarios.Pass}},
		{"Stripe-style 5xx caching, profile cache_5xx true", []string{"cache-5xx"},
			func(p *apispec.Profile) { p.Cache5xx = apispec.Yes },
			map[string]scenarios.Status{"errors/transient-5xx": scenarios.Pass, "errors/failure-releases-key": scenarios.Skip}},
		{"5xx cached, profile unknown", []string{"cache-5xx"},
			func(*apispec.Profile) {},
			map[string]scenarios.Status{"errors/transient-5xx": scenarios.Skip, "errors/failure-releases-key": scenarios.Skip}},
		{"validation errors not stored, profile cache_validation false", nil,
			func(p *apispec.Profile) { p.CacheValidation = apispec.No },
			map[string]scenarios.Status{"errors/validation-not-stored": scenarios.Pass}},
		{"validation errors not stored, profile cache_validation true", nil,
			func(p *apispec.Profile) { p.CacheValidation = apispec.Yes },
			map[string]scenarios.Status{"errors/validation-not-stored": scenarios.Warn}},
		{"business errors not cached, profile cache_4xx_business false", []string{"no-cache-4xx"},
			func(p *apispec.Profile) { p.Cache4xxBusiness = apispec.No },
			map[string]scenarios.Status{"errors/business-error-kept": scenarios.Skip}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			tg := startDemo(t, row.defects...)
			p := ietf(t)
			row.profile(p)
			var run []string
			for id := range row.want {
				run = append(run, id)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: run})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 2*len(row.want) {
				t.Fatalf("%d results, want %d", len(rep.Results), 2*len(row.want))
			}
			for _, r := range rep.Results {
				if want := row.want[r.ID]; r.Status != want {
					t.Errorf("%s: %s, want %s (expected %q, observed %q %s)", r.Name(), r.Status, want, r.Expected, r.Observed, r.Reason)
				}
			}
		})
	}
}

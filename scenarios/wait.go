package scenarios

import (
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// LongestWait is the longest wait a planned instance cannot skip: an
// expiry case waits out the TTL plus grace, a lease case the lease plus a
// margin, an overlap case its slow variant. Instances run concurrently,
// so a run takes at least this long; front ends show it as an ETA.
func LongestWait(t *apispec.Target, p *apispec.Profile, planned []Planned) time.Duration {
	if p == nil {
		p, _ = apispec.ProfileByName(apispec.DefaultProfile)
	}
	var slow time.Duration
	for _, op := range t.Operations {
		if v, ok := op.Variants[apispec.VariantSlow]; ok {
			slow = max(slow, v.Duration)
		}
	}
	var longest time.Duration
	for _, in := range planned {
		if !in.Runnable() {
			continue
		}
		for _, n := range in.Needs {
			switch n {
			case NeedTTL:
				if w := t.TTL + p.Grace; w <= maxExpiryWait {
					if in.ID == "expiry/expired-key-burst" {
						w += 2 * slow // its original and its burst ride the slow variant
					}
					longest = max(longest, w)
				}
			case NeedLease:
				longest = max(longest, t.Lease+leaseMargin, slow)
			case NeedSlow:
				longest = max(longest, slow)
			}
		}
	}
	return longest
}

// maxExpiryWait bounds how long an expiry case may wait. A longer declared
// TTL (Stripe's 24 h) needs a test deployment with a short one (trap C9).
const maxExpiryWait = 2 * time.Minute

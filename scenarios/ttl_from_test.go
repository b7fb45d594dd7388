package scenarios_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestTTLFromAdvertised: with ttl_from and no ttl, the lifetime the API
// advertises (the reference's GET /v1/config, an ISO 8601 duration) is the
// TTL the expiry cases judge by; an endpoint that advertises none is a
// setup error naming ttl_from, never a verdict.
func TestTTLFromAdvertised(t *testing.T) {
	tg := startDemoTTL(t, 3*time.Second)
	tg.TTL = 0
	tg.TTLFrom = &apispec.KeySource{Method: "GET", Path: "/v1/config", Pointer: "/idempotency-key-lifetime"}
	tg.Operations = tg.Operations[:1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"expiry/replays-before-ttl", "expiry/fresh-after-ttl"}})
	if err != nil {
		t.Fatal(err)
	}
	if tg.TTL != 3*time.Second {
		t.Errorf("rule: the advertised PT3S is the TTL: got %s", tg.TTL)
	}
	for _, r := range rep.Results {
		if r.Status != scenarios.Pass {
			t.Errorf("rule: the expiry cases run on the advertised TTL: %s %s %s", r.Name(), r.Status, r.Reason)
		}
	}
	bad := startDemoTTL(t, 3*time.Second)
	bad.TTL = 0
	bad.TTLFrom = &apispec.KeySource{Method: "GET", Path: "/v1/config", Pointer: "/no-such-member"}
	if _, err := scenarios.Run(ctx, bad, ietf(t), scenarios.RunOptions{Run: []string{"expiry/replays-before-ttl"}}); err == nil || !strings.Contains(err.Error(), "ttl_from") {
		t.Errorf("rule: a lifetime that cannot be read is a setup error naming ttl_from: %v", err)
	}
}

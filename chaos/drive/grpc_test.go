package drive_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos/drive"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// grpcReference serves the reference gRPC service and returns its target
// with the key where carrier says: AIP-155's request_id, AEP-155's
// {key, first_sent} (CreateRefund), or metadata.
func grpcReference(t *testing.T, carrier string) *apispec.Target {
	t.Helper()
	cfg := demotest.GRPCConfig(demotest.ServeGRPC(t, demo.Options{Lease: 5 * time.Second}))
	switch carrier {
	case "aep":
		cfg = strings.NewReplacer("{field: request_id}", "{field: idempotency_key, first_sent: true}",
			"PaymentService/CreatePayment", "PaymentService/CreateRefund", "preset: aip-155", "preset: aep-155").Replace(cfg)
	case "metadata":
		cfg = strings.NewReplacer("{field: request_id}", "{metadata: x-idempotency-key}", "preset: aip-155", "preset: grpc-metadata").Replace(cfg)
	}
	tg, _, err := apispec.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestGRPC: the harness over gRPC, each key place. Answers are dropped
// after the commit, calls duplicated, and the reference executes every
// key once: the retries carry the same key in the same place (for
// AEP-155 the same first_sent, else the reference would refuse them as
// another request and the keys would end lost). The rules were parsed
// for HTTP; Run parses them again for gRPC.
func TestGRPC(t *testing.T) {
	for _, carrier := range []string{"aip", "aep", "metadata"} {
		t.Run(carrier, func(t *testing.T) {
			res, err := drive.Run(context.Background(), grpcReference(t, carrier), drive.WithOps(120), drive.WithConcurrency(8),
				drive.WithFaults(mustRules("drop-response:0.3", "duplicate:0.1")...), drive.WithSeed(3), drive.WithDeadline(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if res.Protocol != "gRPC" || res.Ops != 120 || res.Faults["drop-response"] == 0 || res.Faults["duplicate"] == 0 {
				t.Fatalf("protocol %q, %d ops, faults %v: want gRPC, 120 and both faults", res.Protocol, res.Ops, res.Faults)
			}
			if len(res.Violations) != 0 || res.Judged < 100 || !res.Exercised {
				t.Fatalf("%d violations (%v), %d keys judged, not judged %v", len(res.Violations), res.Violations, res.Judged, res.NotJudged)
			}
		})
	}
	t.Run("no gRPC form", func(t *testing.T) {
		_, err := drive.Run(context.Background(), grpcReference(t, "aip"), drive.WithOps(1), drive.WithFaults(mustRules("reset-midbody")...))
		if err == nil || !strings.Contains(err.Error(), "reset-midbody has no gRPC form yet") {
			t.Fatalf("reset-midbody over gRPC: %v", err)
		}
	})
}

package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// TestGRPCSetup: over gRPC a setup: is an RPC of its own (CreatePayment),
// called once per key through the carrier, and its answer's name is bound
// into the operation's message (the refund's description): the replay and
// mismatch cases pass, each key's refund names its own payment, and the
// setup calls are in the evidence. Declared an update (a refund of the
// payment the setup made), the refund also runs update/after-other-key
// over gRPC: another key's refund of the same payment, then the first
// key's retry gets its stored answer.
func TestGRPCSetup(t *testing.T) {
	httpBase, g := demotest.GRPCServer(t, demo.Options{TTL: 3 * time.Second, Lease: 3 * time.Second}, nil)
	grpcBase := demotest.ServeGRPCServer(t, g)
	tg, p, err := apispec.ParseConfig(fmt.Appendf(nil, `base_url: %s
key: {metadata: x-idempotency-key}
principals:
  - {name: alice, metadata: {authorization: Bearer alice}}
oracle: {url: "%s/v1/effects?key={key}", pointer: /executions}
operations:
  - name: refunds
    rpc: idemcheck.reference.v1.PaymentService/CreateRefund
    body: {parent: accounts/a1, payment: {amount: 500, currency: USD, description: "refund of {setup.name}"}}
    id_pointer: /name
    kind: update
    mutations: [{name: changed-amount, patch: {payment: {amount: 501}}}]
    setup: {rpc: idemcheck.reference.v1.PaymentService/CreatePayment, body: {parent: accounts/a1, payment: {amount: 1000, currency: USD}}}
profile:
  preset: grpc-metadata
  overrides: {mismatch_status: INVALID_ARGUMENT, in_flight_status: ABORTED}
`, grpcBase, httpBase))
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"replay/single-execution", "replay/same-body", "mismatch/changed-body", "update/after-other-key"}
	rep, err := Run(t.Context(), tg, p, RunOptions{Run: ids})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status != Pass {
			t.Errorf("%s: %s %s %s", r.Name(), r.Status, r.Observed, r.Reason)
		}
		setups, bound := 0, 0
		for _, x := range r.Exchanges {
			if strings.HasPrefix(x.Label, "setup") {
				setups++
			} else if strings.Contains(string(x.Request.Body), "refund of payments/") || strings.Contains(string(x.Request.Body), "refund of accounts/") {
				bound++
			}
		}
		if setups == 0 || bound == 0 {
			t.Errorf("%s: %d setup calls, %d requests naming the payment in the evidence", r.Name(), setups, bound)
		}
	}
}

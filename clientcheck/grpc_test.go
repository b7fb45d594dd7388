package clientcheck_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/clientcheck"
	"github.com/idemcheck/idemcheck/examples/grpcshop/shopv1"
	"github.com/idemcheck/idemcheck/scenarios"
)

// shopConfig is a config for examples/grpcshop's CheckoutService, a
// service the stand-in has no code of: it reads it from a protoset.
// aep: CreateRefund with AEP-155's idempotency_key {key, first_sent} and
// docs/clients.md's configured response; else CreateOrder with AIP-155's
// request_id, answered from the request (the default).
func shopConfig(t *testing.T, aep bool) (*apispec.Target, *apispec.Profile) {
	t.Helper()
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(timestamppb.File_google_protobuf_timestamp_proto),
		protodesc.ToFileDescriptorProto(shopv1.File_checkout_proto),
	}}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	protoset := filepath.Join(dir, "shop.protoset")
	if err := os.WriteFile(protoset, b, 0o600); err != nil {
		t.Fatal(err)
	}
	op := `{name: orders, rpc: shop.v1.CheckoutService/CreateOrder, body: {order: {sku: sku_1, quantity: 1, card: tok_visa}}, id_pointer: /name}`
	key, preset := "{field: request_id}", "aip-155"
	if aep {
		op = `{name: refunds, rpc: shop.v1.CheckoutService/CreateRefund, body: {payment: orders/o1, amount_cents: 500, reason: damaged}, id_pointer: /name,
		  response: {body: {name: 'customers/c1/refunds/{id}', payment: orders/o1, amountCents: 500, providerRefundId: re_1}}}`
		key, preset = "{field: idempotency_key, first_sent: true}", "aep-155"
	}
	cfg := filepath.Join(dir, "shop.yaml")
	yaml := fmt.Sprintf("base_url: grpc://127.0.0.1:1\nprotoset: %s\nkey: %s\nprincipals: [{name: alice, metadata: {authorization: Bearer alice}}]\noperations: [%s]\nprofile: {preset: %s}\n", protoset, key, op, preset)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	tgt, profile, err := apispec.LoadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tgt, profile
}

// retryPolicy is grpc's own retry (gRFC A6) on the statuses that say
// nothing ran, it is still running, or the answer was lost: grpc re-sends
// the request message it was given, byte for byte.
const retryPolicy = `{"methodConfig": [{"name": [{"service": "shop.v1.CheckoutService"}], "retryPolicy": {
  "maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "0.4s", "backoffMultiplier": 2,
  "retryableStatusCodes": ["UNAVAILABLE", "ABORTED", "RESOURCE_EXHAUSTED", "INTERNAL"]}}]}`

// shopClient is a small CheckoutService client: it mints the key (and
// AEP-155's first_sent) once per call and retries under it, through
// grpc's retry policy (policy: its own loop then retries only a timed-out
// attempt, which the policy cannot) or its own loop.
type shopClient struct {
	policy bool
	aep    bool
	// firstSentPerAttempt is a defect: first_sent stamped again on each
	// attempt of the own loop, so that a retry is another request.
	firstSentPerAttempt bool
	// ownRetries counts the own loop's retries of a status grpc's policy
	// retries: none when the policy is on.
	ownRetries *atomic.Int64
}

func (c shopClient) call(ctx context.Context, base string) (string, error) {
	conn, err := dial(base, c.policy)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	stub := shopv1.NewCheckoutServiceClient(conn)
	key := rand.Text()
	firstSent := timestamppb.Now()
	return retryCall(ctx, c.policy, c.ownRetries, func(actx context.Context) (string, error) {
		if !c.aep {
			o, err := stub.CreateOrder(actx, &shopv1.CreateOrderRequest{RequestId: key, Order: &shopv1.OrderDraft{Sku: "sku_1", Quantity: 1, Card: "tok_visa"}})
			return o.GetName(), err
		}
		if c.firstSentPerAttempt {
			firstSent = timestamppb.Now()
		}
		r, err := stub.CreateRefund(actx, &shopv1.CreateRefundRequest{Payment: "orders/o1", AmountCents: 500, Reason: "damaged",
			IdempotencyKey: &shopv1.IdempotencyKey{Key: key, FirstSent: firstSent}})
		if err == nil && (r.GetProviderRefundId() != "re_1" || !strings.HasPrefix(r.GetName(), "customers/c1/refunds/id_")) {
			return "", fmt.Errorf("refund %v: not the configured response", r)
		}
		return r.GetName(), err
	})
}

// dial connects a test client to a gRPC stand-in's base URL, on grpc's
// retry policy when policy is set.
func dial(base string, policy bool) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if policy {
		opts = append(opts, grpc.WithDefaultServiceConfig(retryPolicy))
	}
	return grpc.NewClient(strings.TrimPrefix(base, "grpc://"), opts...)
}

// retryCall is a test client's retry loop around one logical call: up to
// 4 attempts of a second each on a doubling back-off from 200ms,
// retrying a timeout and, unless grpc's policy retried them already, the
// statuses that say nothing ran, it is still running, or the answer was
// lost. ownRetries counts the loop's retries of those.
func retryCall(ctx context.Context, policy bool, ownRetries *atomic.Int64, attempt func(ctx context.Context) (string, error)) (string, error) {
	var last error
	for n := 1; n <= 4; n++ {
		if n > 1 {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(time.Duration(50<<n) * time.Millisecond):
			}
		}
		actx, cancel := context.WithTimeout(ctx, time.Second)
		id, err := attempt(actx)
		cancel()
		if err == nil {
			return id, nil
		}
		last = err
		switch status.Code(err) {
		case codes.DeadlineExceeded:
		case codes.Unavailable, codes.Aborted, codes.ResourceExhausted, codes.Internal:
			if policy { // grpc's policy retried it already, and gave up
				return "", err
			}
			ownRetries.Add(1)
		default:
			return "", err
		}
	}
	return "", fmt.Errorf("gave up after 4 attempts: %w", last)
}

// A service read from a protoset, driven by a client on grpc's retry
// policy (AIP-155's request_id) and by one on its own loop (AEP-155's
// idempotency_key {key, first_sent}): both keep the key and the request
// the same on every attempt of a call and fresh per call, and pass every
// MUST; a client that stamps first_sent again per attempt fails the retry
// cases.
func TestGRPCProtosetClients(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client shopClient
		fail   []string
	}{
		{"retry-policy/aip-155", shopClient{policy: true}, nil},
		{"own-loop/aep-155", shopClient{aep: true}, nil},
		{"retry-policy/aep-155", shopClient{policy: true, aep: true}, nil},
		{"own-loop/aep-155/first-sent-per-attempt", shopClient{aep: true, firstSentPerAttempt: true}, []string{"retry/lost-answer", "retry/after-503"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, profile := shopConfig(t, tc.client.aep)
			tc.client.ownRetries = new(atomic.Int64)
			opts := clientcheck.Options{Target: tgt, Profile: profile, Driver: clientcheck.Func(tc.client.call), Subject: "shop-client", Strict: true}
			if tc.fail != nil {
				opts.Run = tc.fail
			}
			rep, err := clientcheck.Check(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			failsExactly(t, rep, tc.fail)
			if n := tc.client.ownRetries.Load(); tc.client.policy && n != 0 {
				t.Errorf("the own loop retried %d times: the attempts did not come from grpc's retry policy", n)
			}
		})
	}
}

// failsExactly holds rep to fail exactly the cases fail names; with
// none, to pass every MUST that applies.
func failsExactly(t *testing.T, rep *scenarios.Report, fail []string) {
	t.Helper()
	failed := map[string]bool{}
	for _, r := range rep.Results {
		t.Logf("%-22s %-12s %s%s", r.ID, r.Status, r.Observed, r.Reason)
		switch {
		case r.Status == scenarios.Fail:
			failed[r.ID] = true
		case fail == nil && r.Level == scenarios.Must && r.Status != scenarios.Pass && !scenarios.DoesNotApply(r):
			t.Errorf("%s: %s: %s", r.ID, r.Status, r.Reason)
		}
	}
	for _, id := range fail {
		if !failed[id] {
			t.Errorf("%s did not fail", id)
		}
		delete(failed, id)
	}
	for id := range failed {
		t.Errorf("%s failed", id)
	}
}

// A protoset operation the stand-in cannot serve is a setup error (exit
// 2) naming it: a method not in the protoset, an id_pointer that is no
// string field of the response message.
func TestGRPCProtosetSetupErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(op *apispec.Operation)
		says string
	}{
		{"no-such-method", func(op *apispec.Operation) { op.RPC = "shop.v1.CheckoutService/CreateInvoice" }, "has no method CreateInvoice"},
		{"no-such-service", func(op *apispec.Operation) { op.RPC = "shop.v2.Checkout/CreateOrder" }, "service shop.v2.Checkout is not in protoset"},
		{"id-not-a-string", func(op *apispec.Operation) { op.IDPointer = "/quantity" }, `id_pointer "/quantity"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, profile := shopConfig(t, false)
			tc.edit(&tgt.Operations[0])
			never := clientcheck.Func(func(context.Context, string) (string, error) { t.Error("the client ran"); return "", nil })
			_, err := clientcheck.Check(t.Context(), clientcheck.Options{Target: tgt, Profile: profile, Driver: never, Run: []string{"key/present"}})
			var se *clientcheck.SetupError
			if !errors.As(err, &se) || se.Code != 2 || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %v, want a setup error (2) saying %q", err, tc.says)
			}
		})
	}
}

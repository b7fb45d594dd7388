// Command grpcshop is a checkout service over gRPC (shop.v1.CheckoutService,
// shopv1/checkout.proto) written to be checked by idemcheck the way a
// production service is: no test knobs. Its idempotency records live in
// PostgreSQL; every charge and refund goes to a card provider over HTTP,
// which idemcheck's downstream double plays in tests. CreateOrder is
// idempotent by AIP-155's request_id, CreateRefund by AEP-155's
// idempotency_key {key, first_sent}; both keys are optional and scoped by
// the calling customer (the API key in "authorization: Bearer <key>"
// metadata) and the method. Server reflection is on.
//
//	DATABASE_URL=postgres://... GRPCSHOP_API_KEYS=sk_test_alice=alice,sk_test_bob=bob \
//	  go run ./examples/grpcshop -addr 127.0.0.1:50061 -provider-url http://127.0.0.1:9091 -ttl 4s
//
// GRPCSHOP_DEFECT=name starts a broken build instead (defects.go);
// idemcheck.yaml (CreateOrder) and idemcheck-aep.yaml (CreateRefund)
// describe the service to idemcheck, and idemcheck_test.go proves each
// build gets the verdict it deserves.
//
// The service imports nothing of idemcheck's but its own generated code
// (shopv1), so that a pass says something about idemcheck rather than
// about shared code; its tests drive it as a user would, through the
// idemcheck binary and internal/testenv.
package main

// Command shop is a small shop API with its own Idempotency-Key handling,
// written independently of idemcheck's reference implementation: orders
// are kept in PostgreSQL and paid through a payment provider reached over
// HTTP. It has no test knobs: a slow or failing payment is the provider's
// doing, and idemcheck's downstream double plays the provider in tests.
//
//	DATABASE_URL=postgres://... PROVIDER_URL=http://127.0.0.1:9090 \
//	  go run ./examples/shop -addr 127.0.0.1:8080 -ttl 4s
//
// Replicas share the database: start more on other addresses.
// -provider-url overrides PROVIDER_URL (a managed target's
// "-provider-url {downstream}").
//
// -kafka-brokers and -kafka-topic (or KAFKA_BROKERS, KAFKA_TOPIC) make it
// announce each paid order as an order.paid event through an outbox table
// and a relay (events.go); without them it publishes nothing.
//
// SHOP_DEFECT=name starts a broken build instead (defects.go);
// examples/shop/idemcheck.yaml describes the API to idemcheck and
// idemcheck_test.go proves each build gets the verdict it deserves.
//
// It imports nothing of idemcheck's, so that passing the suite says something
// about the suite rather than about shared code; its tests check it through
// idemchecktest, scenarios and internal/testenv, as a user would.
package main

// Command orders is a small shop API with its own idempotency layer,
// written independently of idemcheck's reference implementation. It makes
// different legal choices than the reference: the key travels raw in
// X-Idempotency-Key, users authenticate with X-Api-Key, replays carry no
// marker header, a changed body gets 409 while the first request is in
// flight and 422 once it completed, and the retention window (TTL) starts
// when the response is stored. examples/orders.yaml describes it to
// idemcheck; main_test.go proves the suite accepts it.
//
//	go run ./examples/orders -addr 127.0.0.1:8090 -ttl 3s
//
// It imports nothing of idemcheck's, so that passing the suite says something
// about the suite rather than about shared code; its tests check it through
// idemchecktest and initconfig, as a user would.
package main

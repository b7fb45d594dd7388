// Package variants holds small payment APIs, written independently of
// idemcheck's reference implementation and of examples/orders, that each
// make one choice differently from a correct core: the other legal choices
// an Idempotency-Key implementation may make (423 or blocking in flight,
// 409 on a changed body, Stripe-like JSON errors, an optional key, TTL from
// completion, 409 "expired", bare-UUID keys, integer ids per table, a 5 s
// idle timeout) and classic defects (an ignored key, execution before a
// mismatch answer, a lapsing lock, a missing key executed before the 400,
// racy expiry cleanup). variants_test.go drives each through its YAML
// config in testdata/ exactly as `idemcheck run --config` would: the legal
// ones must pass the whole catalog with no fail and no warn, the broken
// ones must fail on the case IDs that name their defect.
//
// It imports nothing of idemcheck's outside its tests, so that a verdict says
// something about the suite rather than about shared code; the tests reach
// the engine (scenarios, target) and internal/testenv.
package variants

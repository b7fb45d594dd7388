// Package knobless is an orders API as teams write them, for the tests and
// the benchmark of the downstream double: no delay or fail field in its
// body, no effects endpoint unless asked. POST /v1/orders charges a card
// at a payment provider (Options.ProviderURL: the double), passing the
// order's reference on, and keeps idempotency in memory (the reference
// middleware; its defects make the broken builds).
//
// Of idemcheck's packages it imports only reference and reference/memstore.
// It is a test fixture above the reference server: apispec, wire, evidence and
// chaos must never reach it; tests and its command import it.
package knobless

// Package bookings is a small hotel-bookings API with its own
// idempotency layer, written for init's tests independently of the
// reference and of examples/: initconfig/testdata/bookings.yaml
// describes it (OpenAPI 3.1, $refs, an API-key security scheme). Its
// choices differ from the reference's: the key travels bare in
// X-Idempotency-Key, users send X-Api-Key, the created id sits at
// /booking/booking_id, a changed body or a key in flight gets 409, replays
// carry X-Idempotent-Replay: true, errors are plain JSON, and keys are kept
// for the TTL given to New, counted from the first request.
//
// It imports nothing of idemcheck's, so that it shares no code with what it
// tests; only tests (initconfig's and the CLI's) import it.
package bookings

// Package rawspelling is a small HTTP/1.1 idempotency server written on a
// raw TCP listener instead of net/http, so that it reads field names as
// they were sent (net/http canonicalises them before a handler sees
// them), in a correct build and in one that honours the key field only
// under its exact spelling; and a client helper that sends a field name
// spelled exactly as given. Tests use them to show that a check of the
// key field's spelling sees what it claims to.
//
// It imports nothing of idemcheck's, so that it shares no code with what it
// tests; only tests import it.
package rawspelling

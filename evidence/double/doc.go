// Package double is a downstream double: a real HTTP server that stands
// where the API under test sends a dependency's calls (a payment
// provider), answers them from configured routes, and keeps a journal of
// them that is both the oracle (how many calls a key caused) and the
// evidence (when, what was answered). WireMock's request journal and
// verify are the model.
//
// Calls are attributed to tracked tokens: a call belongs to a token when
// its URL, a header value or its body holds it (Track). idemcheck writes a
// token unique to each idempotency key into the key's requests (the
// operation's marker), or tracks the key itself for an API that forwards
// it. Per-token behaviour (Behave) delays or fails only that key's calls.
//
// It is a leaf: it imports nothing of idemcheck's, so anything (the
// engine's evidence, chaos, load, the idemcheck double command) may use
// it. It must not learn about keys or operations: the caller tracks the
// tokens it wants counted.
package double

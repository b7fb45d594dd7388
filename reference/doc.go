// Package reference is an Idempotency-Key middleware for net/http that
// follows draft-ietf-httpapi-idempotency-key-header-07 and the common
// vendor practice: the baseline idemcheck measures other APIs against, and
// a small example of doing it right. The demo subpackage serves it.
//
// It is an independent implementation, the baseline the suite is measured
// against: it and its subpackages import nothing of idemcheck's outside
// reference/ (only their tests use internal/testenv, internal/demotest and
// internal/rawspelling), so that the engine's choices cannot leak into the
// baseline. internal/archtest checks this.
package reference

// Package client is the reference's client: a small payments SDK that
// does its part of the Idempotency-Key contract (a key minted once per
// logical call, outside the retry loop, re-sent byte for byte with a body
// snapshotted once; 409, 429 and 5xx retried with bounded, growing
// back-off that honours Retry-After; 400 and 422 never resent), and the
// classic client defects behind WithDefects, for idemcheck's client
// catalog to catch.
//
// Main is the driving contract of `idemcheck client` (docs/clients.md):
// `idemcheck refclient [--defect NAME]` runs it.
//
// Like the reference server it is an independent implementation: it
// imports nothing of idemcheck's outside reference/ (internal/archtest).
package client

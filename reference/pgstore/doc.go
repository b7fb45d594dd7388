// Package pgstore is the PostgreSQL reference.Store. A record is a row keyed
// by its scope; the claim is one INSERT ... ON CONFLICT statement that also
// takes over a row whose TTL or lease has ended, so two claimants can never
// both win. It implements reference.Atomic: the handler's effects (the demo
// Ledger's charges) and the completed record commit in one transaction, so
// a crash leaves either both or neither.
//
// Of idemcheck's packages it imports only reference and reference/demo (the
// Ledger whose charges commit with the record).
package pgstore

// Package memstore is the in-memory reference.Store: the embedded default
// of idemcheck serve. Records live in shards, each behind its own mutex, so
// requests for different keys rarely contend; a background sweeper evicts
// expired records so memory stays bounded by the live working set.
//
// Of idemcheck's packages it imports only reference.
package memstore

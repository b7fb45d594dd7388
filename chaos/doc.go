// Package chaos is a per-request HTTP fault proxy for idempotency testing:
// it can let the upstream commit a request and then lose the response,
// which no TCP-level proxy can do per request. Faults are small types
// behind one interface (one file each); every attempt is written to a
// JSONL history that the exactly-once checker reads.
//
// It is a leaf that anything may use: of idemcheck's packages it imports
// only internal/jsonx (JSON pointers into bodies) and internal/expiry (the
// shared time rule for a key's lifetime). It never imports the engine
// (scenarios puts the proxy in front of a target, so that would be a
// cycle), target, wire or evidence; the retrying driver that needs those
// lives in chaos/drive. internal/archtest checks this.
package chaos

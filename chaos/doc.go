// Package chaos is a per-request HTTP fault proxy for idempotency testing:
// it can let the upstream commit a request and then lose the response,
// which no TCP-level proxy can do per request. Faults are small types
// behind one interface (one file each); every attempt is written to a
// JSONL history that the exactly-once checker reads. The checker's
// Findings are data: reports/chaosreport renders them (the console
// summary, JSON, the HTML page drawn from the history).
//
// GRPCProxy is its gRPC form (grpc.go): a grpc.Server forwarding each
// call's bytes to the upstream, the faults' gRPC forms (ParseGRPCRule)
// dropping a committed call's answer, holding or duplicating a call; its
// history reads as the HTTP proxy's, answers in HTTP terms.
//
// It is a leaf that anything may use: of idemcheck's packages it imports
// only internal/jsonx (JSON pointers into bodies), internal/expiry (the
// shared time rule for a key's lifetime), internal/grpccode (gRPC codes
// in HTTP terms) and internal/clock (waits a client may cut short). It
// never imports the engine (scenarios puts the proxy in front of a target, so that would be a
// cycle), apispec, wire or evidence: chaos/front, which puts a proxy in
// front of a target for any carrier, and the retrying driver
// (chaos/drive) need those. internal/archtest checks this.
package chaos

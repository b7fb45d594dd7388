// Package clientcheck certifies the client side of the Idempotency-Key
// contract: SDKs and API clients. It plays a correct server (the
// stand-in), injects one fault per case, journals every attempt the client
// makes and judges the journal against the client catalog, the way
// Autobahn|Testsuite's fuzzing server grades WebSocket clients.
//
// The stand-in answers the operations of a config (apispec; by default
// the reference's POST /v1/charges contract), each success with the
// operation's configured response (apispec.Response) or the request
// echoed, a fresh id at id_pointer, and honours keys with the
// reference middleware (reference.Middleware over reference/memstore)
// under the configured profile, so a retry with the same key gets the
// original answer and a reused key with another payload gets 422. Each
// case run gets its own base URL prefix and its own store: concurrent and
// repeated runs never mix. For a gRPC config it serves the reference's
// PaymentService (reference/grpcref) instead, or any service of the
// config's protoset (grpc_protoset.go, read with wire.ReadProtoset; its
// configured response message checked against it before any case runs),
// a server per case run (grpc.go), with the same faults as gRPC statuses.
// Both listen on loopback only.
//
// A client is driven through a Driver: the CLI's (Command) runs a process
// per case run under the fixed driving contract (docs/clients.md); the go
// test face's (Func) calls a Go function per logical call. Verdicts use the server
// catalog's vocabulary (scenarios.Result, scenarios.Report), so every
// report writer of reports/ prints them.
//
// It imports apispec, wire, scenarios (the verdict vocabulary), the
// reference middleware, its memory store and gRPC service, and
// internal/*; no front end (internal/archtest).
package clientcheck

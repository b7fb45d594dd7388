// Package wire is how one request reaches the API and its answer comes
// back: building the request of an operation, variant and key (Build),
// the Carrier that sends it (HTTP: HTTP/1.1 and HTTP/2 over an http.Client
// that never re-sends, TLS from the target's settings), bursts released by
// last-byte synchronisation over HTTP/1.1 and HTTP/2 (LastByte), fetching
// server-issued keys (FetchKey, Keys), the preflight that something
// answers (Preflight), and the recorded Exchange with its curl
// reproduction.
//
// Carrier is the seam between the engine and a transport: HTTP, and GRPC
// (a method found by server reflection or a protoset, the request built
// as a dynamic message from its protojson, the answer's code kept beside
// the HTTP status google.rpc.Code maps it to). The engine sends through it
// and records what comes back, whatever carries it.
//
// It may import target and internal/ packages. It must not import
// evidence, scenarios or any front end, and it knows nothing of cases,
// verdicts or how executions are counted.
package wire

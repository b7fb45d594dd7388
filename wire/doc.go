// Package wire is how one request reaches the API and its answer comes
// back: building the request of an operation, variant and key (Build),
// the Carrier that sends it, bursts released by last-byte
// synchronisation over HTTP/1.1 and HTTP/2 (LastByte), fetching
// server-issued keys (FetchKey, Keys), the preflight that something
// answers (Preflight), and the recorded Exchange with its curl
// reproduction.
//
// # The carrier seam
//
// Carrier (carrier.go) is the seam between every face and a transport.
// A run builds one (NewCarrier) and sends every request that carries a
// key through it:
//
//	Name() string                                   // for words, never to branch on
//	Build(op, Request) Exchange                     // the key encoded as this carrier carries it
//	Do(ctx, Exchange) (Resp, Exchange)              // sent once; Resp.Status in the profile's terms
//	Reach(ctx, base) (proto string, err error)      // the preflight's "something answers"
//	Close()
//
// What a carrier can do beyond that is an optional interface it
// implements, asked by type assertion: LastBytes (a burst released by
// synchronised last bytes), Warmer (connections opened ahead of a
// burst), Methods (the request goes with the HTTP method built), HeaderFields
// (answers carry replayable header fields: Location, Retry-After),
// Problems (RFC 9457 problem documents), ContentCoding (Accept-Encoding
// negotiated, coded bytes replayed), RawBodies (bodies travel as the bytes
// built and written), HeaderKeys (a key header field goes spelt and
// written as built), Messages (calls carry protobuf messages of
// methods the carrier resolves: a fault proxy reads them by descriptors)
// and Untimed (a copy whose requests are not timed at the send, for a
// face that times them itself: load).
// A case that needs one says so beside its definition and does not apply
// over a carrier without it. Do calls the WithSent hook of its context
// once the request is written, on every carrier (but an Untimed copy):
// overlaps are timed from it.
//
// HTTP carries HTTP/1.1 and HTTP/2 (an http.Client that never re-sends,
// TLS from the target's settings) and has every capability but Untimed. GRPC (a method
// found by server reflection or a protoset, the request built as a
// dynamic message from its protojson, each distinct body encoded and each
// distinct answer decoded once per method, the answer's code kept beside the
// HTTP status google.rpc.Code maps it to) has Warmer, Messages and Untimed. A carrier over
// HTTP with its own encoding of the key and its own reading of answers
// (GraphQL, JSON-RPC) builds on Build and HTTP.Do and implements what it
// has; the engine runs it unchanged.
//
// Every face sends a gRPC target's calls through its carrier's Do: the
// engine, chaos's driver and load's paced client alike. No gRPC call
// goes through an http.RoundTripper (Transport is HTTP's only).
//
// It may import apispec and internal/ packages. It must not import
// evidence, scenarios or any front end, and it knows nothing of cases,
// verdicts or how executions are counted.
package wire

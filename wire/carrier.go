package wire

import (
	"context"
	"net/http"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/idemcheck/idemcheck/apispec"
)

// Carrier is how one request of an operation is built, reaches the API
// and its answer comes back. Every face holds one, built once per run
// (NewCarrier), and sends every request that carries a key through it:
// the engine's cases, chaos's driver, load's warm-up. HTTP carries
// HTTP/1.1 and HTTP/2 targets, GRPC gRPC ones; a further carrier (GraphQL,
// JSON-RPC over HTTP) implements this interface and the capabilities it
// has, and the engine runs it unchanged.
//
// What a carrier cannot do is a capability it lacks: the optional
// interfaces below (LastBytes, Warmer, Methods, HeaderFields, Problems,
// ContentCoding, RawBodies, HeaderKeys, Messages, Untimed). Callers ask for them with a type
// assertion, never by the carrier's name.
type Carrier interface {
	// Name is the carrier as the reports name it ("HTTP", "gRPC"): for
	// the words of a skip or a note, never to branch on.
	Name() string
	// Build is the exchange r describes on op, not yet sent: method, URL,
	// fields and body, the key encoded as this carrier carries it (a
	// header field, a message field, a GraphQL argument). HTTP's is
	// Build, the one function that builds a request carrying a key; a
	// carrier over HTTP starts from it.
	Build(op *apispec.Operation, r Request) Exchange
	// Do sends x.Request once (never re-sent, never redirected) and
	// returns the answer and x with its response, error and timings
	// filled in. Resp.Status is the answer in the profile's terms: the
	// HTTP status, or the status the carrier reads its answer as (gRPC:
	// google.rpc.Code's mapping; a GraphQL error's code). Resp.Err is a
	// transport error, wrapped in ErrStaleConn or ErrNotConnected when the
	// request cannot have reached the server.
	Do(ctx context.Context, x Exchange) (Resp, Exchange)
	// Reach makes sure something answers at base (the base URL or a
	// replica; any answer will do) and says in which protocol ("HTTP/1.1",
	// "HTTP/2", "gRPC"): the preflight (Preflight). The error says what
	// failed; Preflight wraps it in apispec.ErrUnreachable.
	Reach(ctx context.Context, base string) (proto string, err error)
	// Close ends the carrier's connections; a later Do opens new ones.
	Close()
}

// LastBytes is a carrier that can release a burst by synchronised last
// bytes: every request but its last byte written, then the last bytes
// together (HTTP/1.1 connections, HTTP/2 streams). A carrier without it
// bursts behind a barrier over warmed connections.
type LastBytes interface {
	// SendLastBytes sends xs[i] to bases[i] so (LastByte.Send's
	// contract): ok is false, with why, when it cannot, and then nothing
	// was sent. timeout bounds the burst; around, when set, is called
	// before request i is first written and its result once its answer is
	// read.
	SendLastBytes(ctx context.Context, xs []Exchange, bases []string, timeout time.Duration, around func(i int) (done func())) (rs []Resp, out []Exchange, how string, ok bool, why string)
}

// Warmer is a carrier that can open its connections ahead of a burst, so
// that requests released together are not serialised by dialing.
type Warmer interface {
	// Warm is a carrier like this one holding up to n open connections
	// spread over bases (the base URL when none). The caller closes it.
	Warm(ctx context.Context, n int, bases ...string) Carrier
}

// Methods is a carrier whose requests go with the HTTP method they were
// built with: the method is the case's to choose (method/,
// scope/other-method). An RPC has none.
type Methods interface{ SendsMethod() }

// HeaderFields is a carrier whose answers carry HTTP header fields a
// server stores and replays beside the body: Location and the created
// resource's fields, Retry-After.
type HeaderFields interface{ AnswersHeaderFields() }

// Problems is a carrier whose error answers may be RFC 9457 problem
// documents (application/problem+json) with their links.
type Problems interface{ AnswersProblems() }

// ContentCoding is a carrier whose answers' content coding the request
// negotiates (Accept-Encoding) and the server may store and replay as
// coded bytes.
type ContentCoding interface{ NegotiatesCoding() }

// RawBodies is a carrier whose request body reaches the server as the
// bytes built (JSON text: member order, whitespace, a member no schema
// declares; a body cut short arrives cut) and whose answer body is
// whatever bytes the server wrote, JSON or not.
type RawBodies interface{ KeepsBodyBytes() }

// HeaderKeys is a carrier that sends a key header field as built: its
// name spelt as given (HTTP/1.1 writes it verbatim) and its value in the
// field's own syntax (an RFC 9651 sf-string where the profile says so).
// gRPC metadata is lower case on the wire and holds a bare value.
type HeaderKeys interface{ SpellsKeyHeader() }

// Verbatim is a carrier whose Do sends the built request as it stands,
// over plain HTTP, and returns the HTTP answer as it came: any HTTP client
// (load's vegeta) may send what Build wrote in its stead. An answering
// carrier (GraphQL, JSON-RPC, MCP) is none: it opens sessions and reads
// the answer from the document; nor is gRPC's.
type Verbatim interface{ SendsAsBuilt() }

// NewCarrier is t's carrier: GRPC for a grpc:// or grpcs:// base URL,
// Answering for a graphql, jsonrpc or mcp target, JSONBody for a key in
// the JSON body, else HTTP over hc (one that never re-sends: Client). A gRPC call is
// bounded by hc.Timeout, as an HTTP request is. The caller closes it.
// With hc nil it is a carrier only asked what it can do (a plan), never
// sent through.
func NewCarrier(t *apispec.Target, hc *http.Client) Carrier {
	if t.IsGRPC() {
		g := NewGRPC(t)
		if hc != nil {
			g.Timeout = hc.Timeout
		}
		return g
	}
	switch {
	case t.ReadsAnswers():
		return NewAnswering(t, hc)
	case t.KeyInBody():
		return JSONBody{http: HTTP{Target: t, Client: hc}}
	}
	return HTTP{Target: t, Client: hc}
}

// sentHook keys, in a request's context, what to call once the request
// is fully written (WithSent).
type sentHook struct{}

// WithSent is ctx with f to be called once, when the request sent under
// it is fully written to its connection: the moment overlaps are timed
// from, on every carrier (Do calls it; HTTP from the client trace, GRPC
// from its stats handler), but one made Untimed.
func WithSent(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, sentHook{}, f)
}

// withoutSent is ctx with no WithSent hook: for a request a carrier
// sends of its own before the one timed (an MCP handshake).
func withoutSent(ctx context.Context) context.Context {
	return context.WithValue(ctx, sentHook{}, func() {})
}

// notifySent calls ctx's WithSent hook, if any.
func notifySent(ctx context.Context) {
	if f, _ := ctx.Value(sentHook{}).(func()); f != nil {
		f()
	}
}

// Untimed is a carrier that can make one whose requests are not timed at
// the send: Resp.Sent stays zero and WithSent is never called, for a face
// that times every request itself (load, from its intended send) and
// would pay per request for a time it never reads. The carrier made
// answers as this one does. The caller closes it.
type Untimed interface {
	Untimed() Carrier
}

// Messages is a carrier whose calls carry protobuf messages of methods it
// resolves (by server reflection or a protoset): a fault proxy in front
// of it reads a request's key and an answer's created id with the
// method's descriptors (chaos.StartFront). A carrier without it carries
// HTTP requests a proxy reads as bytes.
type Messages interface {
	// Method resolves path (/package.Service/Method).
	Method(ctx context.Context, path string) (protoreflect.MethodDescriptor, error)
}

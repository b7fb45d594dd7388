package wire

import (
	"context"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// JSONBody is the carrier of an HTTP target whose key is a member of the
// JSON body (carrier: json-body, key: {pointer: ...}): HTTP's, but for
// what a header key has. Not HeaderKeys: no header carries the key, so
// there is no spelling or sf-string to probe. It keeps RawBodies: the
// key is written into the body's own bytes (member order and spacing as
// built).
type JSONBody struct{ http HTTP }

// Name implements Carrier.
func (JSONBody) Name() string { return "HTTP (key in the JSON body)" }

// Build implements Carrier.
func (j JSONBody) Build(op *apispec.Operation, r Request) Exchange {
	return Build(j.http.Target, op, r)
}

// Do implements Carrier.
func (j JSONBody) Do(ctx context.Context, x Exchange) (Resp, Exchange) { return j.http.Do(ctx, x) }

// Reach implements Carrier.
func (j JSONBody) Reach(ctx context.Context, base string) (string, error) {
	return j.http.Reach(ctx, base)
}

// Close implements Carrier.
func (j JSONBody) Close() { j.http.Close() }

// Warm implements Warmer.
func (j JSONBody) Warm(ctx context.Context, n int, bases ...string) Carrier {
	return JSONBody{http: j.http.Warm(ctx, n, bases...).(HTTP)}
}

// SendLastBytes implements LastBytes.
func (j JSONBody) SendLastBytes(ctx context.Context, xs []Exchange, bases []string, timeout time.Duration, around func(i int) (done func())) ([]Resp, []Exchange, string, bool, string) {
	return j.http.SendLastBytes(ctx, xs, bases, timeout, around)
}

// SendsMethod implements Methods.
func (JSONBody) SendsMethod() {}

// AnswersHeaderFields implements HeaderFields.
func (JSONBody) AnswersHeaderFields() {}

// AnswersProblems implements Problems.
func (JSONBody) AnswersProblems() {}

// NegotiatesCoding implements ContentCoding.
func (JSONBody) NegotiatesCoding() {}

// KeepsBodyBytes implements RawBodies.
func (JSONBody) KeepsBodyBytes() {}

// SendsAsBuilt implements Verbatim.
func (JSONBody) SendsAsBuilt() {}

var (
	_ Carrier       = JSONBody{}
	_ LastBytes     = JSONBody{}
	_ Warmer        = JSONBody{}
	_ Methods       = JSONBody{}
	_ HeaderFields  = JSONBody{}
	_ Problems      = JSONBody{}
	_ ContentCoding = JSONBody{}
	_ RawBodies     = JSONBody{}
)

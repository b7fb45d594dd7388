package scenarios

import (
	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// Where a case does not apply, it says so beside its definition
// (Case.Unfit), asking what the run's carrier can do (wire's capability
// interfaces: Methods, Problems, HeaderFields, ...) and where the target
// keeps its key, never a carrier's name. Every other case runs over
// every carrier, judged by the statuses the carrier reads its answers
// as (docs/grpc.md).

// Unfit says why a case does not apply over carrier c to target t, before
// any request is sent ("" when it applies).
type Unfit func(c wire.Carrier, t *apispec.Target) string

// has reports whether c has capability C (one of wire's optional
// interfaces).
func has[C any](c wire.Carrier) bool {
	_, ok := c.(C)
	return ok
}

// needs is the Unfit of a case whose requirement exists only over a
// carrier with capability C; why says what a carrier without it lacks.
func needs[C any](why string) Unfit {
	return func(c wire.Carrier, _ *apispec.Target) string {
		if has[C](c) {
			return ""
		}
		return "does not apply to " + c.Name() + ": " + why
	}
}

// notForKeyField is the Unfit of a case that needs the key outside the
// request message or body (a header field, a metadata entry).
func notForKeyField(why string) Unfit {
	return func(_ wire.Carrier, t *apispec.Target) string {
		switch {
		case t.KeyField() != "":
			return "does not apply to a key in a message field: " + why
		case t.KeyInBody():
			return "does not apply to a key in the request body: " + why
		}
		return ""
	}
}

// notForFirstSent is the Unfit of a case that cannot be judged for an
// AEP-155 key ({key, first_sent}).
func notForFirstSent(why string) Unfit {
	return func(_ wire.Carrier, t *apispec.Target) string {
		if t.Key == nil || !t.Key.FirstSent {
			return ""
		}
		return "does not apply to an AEP-155 key: " + why
	}
}

// The reasons more than one case gives.
var (
	unlessProblems = needs[wire.Problems]("problem+json is HTTP's error document; the carrier's errors have their own shape (a gRPC error is a google.rpc.Status, a GraphQL one an errors entry, a JSON-RPC one an error object)")
	unlessMethods  = needs[wire.Methods]("the call has no HTTP method to choose (an RPC's method is the call itself; a GraphQL or JSON-RPC call is always a POST)")
	unlessSFKeys   = needs[wire.HeaderKeys]("the key is a message field, a metadata value or a member of the body, not an RFC 9651 sf-string")
)

// unfit is why c does not apply over carrier k to t ("" when it does).
func (c Case) unfit(k wire.Carrier, t *apispec.Target) string {
	if c.Unfit == nil {
		return ""
	}
	return c.Unfit(k, t)
}

// carrierOf is t's carrier as the plan asks it what it can do: it never
// sends (wire.NewCarrier without a client).
func carrierOf(t *apispec.Target) wire.Carrier { return wire.NewCarrier(t, nil) }

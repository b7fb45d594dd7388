package scenarios

import (
	"context"
	"fmt"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// leaked judges whether r, an answer of operation to, carries first, the
// stored response of operation op (to == op: the same operation); before
// is the executions under key before r was sent.
//
// On the same operation, created ids decide when op has them (compared at
// the pointer, never searched for: small numeric ids would match by
// chance), then the oracle: a JSON-equal body is a leak unless r executed.
//
// Across operations r is judged with to's evidence. The oracle decides
// first when it sees to's executions (calibrated on to: a counter of op's
// alone never sees them, and would call every execution of to a replay):
// a 2xx that executed nothing carries a stored response. Otherwise the
// created ids are compared, each at its own operation's pointer (and at
// op's, where to's finds none); equal integer ids are leakUnsure (two
// tables may number alike). With neither, r is leakUnknown unless its
// body differs from first's. why explains a leakUnsure or leakUnknown; an
// oracle error is returned for the case to report as inconclusive.
func (e *Env) leaked(ctx context.Context, op, to *apispec.Operation, first, r wire.Resp, key string, before int) (l leak, why string, err error) {
	if !first.OK() || !r.OK() {
		return leakNone, "", nil
	}
	if to != op {
		return e.leakedAcross(ctx, op, to, first, r, key, before)
	}
	id := createdIDOf(op, first)
	if id != "" {
		if createdIDOf(op, r) != id {
			return leakNone, "", nil
		}
		return leakStored, "", nil
	}
	if !jsonEqual(first.Body, r.Body) {
		return leakNone, "", nil
	}
	if !e.HasOracle() {
		return leakUnsure, "equal bodies and no ids or oracle", nil
	}
	return e.leakedByCount(ctx, key, before)
}

// leakedAcross is leaked for r, an answer of another operation to.
func (e *Env) leakedAcross(ctx context.Context, op, to *apispec.Operation, first, r wire.Resp, key string, before int) (leak, string, error) {
	sees, blind := e.oracleSees(to)
	if sees {
		return e.leakedByCount(ctx, key, before)
	}
	id := createdIDOf(op, first)
	other := createdIDOf(to, r)
	if other == "" {
		other = createdIDOf(op, r) // a replay of first carries op's shape
	}
	switch {
	case id != "" && other != "" && id != other:
		return leakNone, "", nil
	case id != "" && other == id && isInteger(id):
		return leakUnsure, fmt.Sprintf("both answers carry id %s, but integer ids of two operations may number different tables, and %s (weak evidence)", id, blind), nil
	case id != "" && other == id:
		return leakStored, "", nil
	case !jsonEqual(first.Body, r.Body):
		return leakNone, "", nil
	}
	return leakUnknown, fmt.Sprintf("equal bodies, no created id to compare (%s id_pointer %q, %s id_pointer %q) and %s", op.Name, op.IDPointer, to.Name, to.IDPointer, blind), nil
}

// leakedByCount: a 2xx under key that executed nothing carries a stored
// response.
func (e *Env) leakedByCount(ctx context.Context, key string, before int) (leak, string, error) {
	n, err := e.Executions(ctx, key)
	if err != nil {
		return leakNone, "", err
	}
	if n > before {
		return leakNone, "", nil
	}
	return leakStored, "", nil
}

// oracleSees reports whether the oracle counts op's executions: there is
// one and the run's calibration on op found no problem. why says what
// cannot count them otherwise.
func (e *Env) oracleSees(op *apispec.Operation) (sees bool, why string) {
	switch {
	case e.oracle == nil:
		return false, "there is no oracle to count executions"
	case e.blind[op.Name] != "":
		return false, "the oracle does not count " + op.Name + "'s executions (" + e.blind[op.Name] + ")"
	}
	return true, ""
}

// usable reports whether principal p can call op with body under a fresh
// key, telling an error about the reused key (trap C8) from an operation p
// may not use at all.
func (e *Env) usable(ctx context.Context, op *apispec.Operation, p int, body []byte) (wire.Resp, bool) {
	r := e.Send(ctx, Req{Label: "same request with a fresh key (can this principal call it?)", Key: e.NewKey(), Principal: p, Op: op, Body: body})
	return r, r.OK()
}

// judgeOtherUser judges principal 1's answer b under k, which principal 0
// used for a: b must be b's own execution.
func (e *Env) judgeOtherUser(ctx context.Context, k string, a, b wire.Resp, body []byte) Verdict {
	expected := "an execution of the second principal's own, never the first principal's response or an error about the key"
	observed := fmt.Sprintf("first principal %s; second principal %s", a.String(), b.String())
	l, why, err := e.leaked(ctx, e.Op, e.Op, a, b, k, 1)
	switch {
	case err != nil:
		return e.Inconclusive(err.Error() + ": " + observed)
	case l == leakStored:
		return e.Fail(expected, "the first principal's response leaked: "+observed)
	case l == leakUnsure:
		return e.Inconclusive(why + ": cannot tell the second principal's execution from a leak: " + observed)
	}
	if v := e.lostConn(b); v != nil {
		return *v
	}
	switch {
	case b.Is5xx() || b.Err != nil:
		return e.Fail(expected, observed)
	case !b.OK():
		if fresh, ok := e.usable(ctx, e.Op, 1, body); !ok {
			return e.Inconclusive("the second principal cannot call this operation even with a fresh key: " + fresh.String())
		}
		return e.Fail(expected, "the key is shared across principals: "+observed)
	}
	n, how, _, err := e.Effects(ctx, k, a, b)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	observed += fmt.Sprintf("; %d executions (%s)", n, how)
	if how == "oracle" && n < 2 && createdIDOf(e.Op, b) == "" {
		// A per-principal oracle may not see b; without ids nothing shows
		// that b executed rather than replayed a copy.
		return e.Inconclusive("cannot show the second principal's request executed: " + observed)
	}
	return e.Pass(observed)
}

// leak is what a response may carry of another request's stored result.
type leak int

// isInteger reports an id made of digits only.
func isInteger(id string) bool {
	for _, c := range id {
		if c < '0' || c > '9' {
			return false
		}
	}
	return id != ""
}

const (
	leakNone    leak = iota
	leakStored       // the stored response came back
	leakUnsure       // equal integer ids of two operations: weak evidence
	leakUnknown      // nothing can tell: no oracle that sees, no ids
)

package scenarios

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/wire"
)

// markForDouble writes into x (a request of op built from r) the token
// the downstream double counts it under, when a double runs: the key's,
// the key field lines' own scope's or the case's keyless scope's
// (countsKeyless); a variant's body gives the key the variant's behaviour.
// The scope is noted for the evidence (downstreamEvidence).
func (e *Env) markForDouble(op *apispec.Operation, r Req, x *wire.Exchange) {
	d := e.double
	if d == nil {
		return
	}
	var scope string
	switch {
	case r.KeyLines != nil && r.SameAs != "":
		scope = r.SameAs // the same request as SameAs's, key field aside
	case r.KeyLines != nil:
		if !d.CountsScopes() {
			return
		}
		scope = KeyLinesScope(r.KeyLines) // counted under it: linesCount
	case !r.NoKey:
		scope = r.Key
		if r.SameAs != "" {
			scope = r.SameAs
		}
		// The body the case asked for: a key in a message field (gRPC)
		// is written into a copy of it (wire.Build), which VariantOf does
		// not know.
		if name := d.VariantOf(r.Body); name != "" {
			_ = d.BehaveVariant(op, r.Key, name) // the route was validated: no error
		}
	case d.CountsKeyless(op):
		scope = e.noKeyScope()
	default:
		return
	}
	x.Request.URL, x.Request.Body = d.Mark(op, scope, x.Request.URL, x.Request.Header, x.Request.Body)
	e.sentUnder(scope)
}

// downstreamEvidence is the case's downstream calls, per key it sent:
// "downstream payments: 2 calls for key …3f2a, at +3 ms (200) and
// +1,212 ms (200)". Keys without calls are left out.
func (e *Env) downstreamEvidence() []string {
	if e.double == nil {
		return nil
	}
	var out []string
	for _, s := range e.sentKeys() {
		name := "key " + evidence.ShortKey(s.key)
		switch {
		case strings.HasPrefix(s.key, "no-key-"):
			name = "the requests without a key"
		case strings.HasPrefix(s.key, KeyLinesScope(nil)):
			name = fmt.Sprintf("the key field lines %q", strings.Split(strings.TrimPrefix(s.key, KeyLinesScope(nil)), "\n"))
		}
		out = append(out, e.double.Lines(s.key, name, s.first)...)
	}
	return out
}

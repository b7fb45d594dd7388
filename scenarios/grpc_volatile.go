package scenarios

import (
	"encoding/json"
	"time"

	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/wire"
)

// volatileValue is what replay/volatile-fields writes at the volatile
// field ptr. Over HTTP a fresh string; over gRPC the body is protojson
// decoded into the request message, so the value keeps the type the
// operation's body gives the field: a timestamp (RFC 3339, as a
// google.protobuf.Timestamp is spelled) a second later, a number plus
// one, a boolean negated; a field the body leaves out is taken for a
// string (any other type makes the call fail to encode: inconclusive,
// saying so).
func (e *Env) volatileValue(ptr string) any {
	fresh := "idemcheck-" + e.NewKey()
	if has[wire.RawBodies](e.carrier) { // the body is sent as the bytes built
		return fresh
	}
	doc, err := jsonx.Decode(e.Body())
	if err != nil {
		return fresh
	}
	v, _ := jsonx.Pointer(doc, ptr)
	switch v := v.(type) {
	case string:
		if at, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return at.Add(time.Second).Format(time.RFC3339Nano)
		}
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n + 1
		}
		if f, err := v.Float64(); err == nil {
			return f + 1
		}
	case bool:
		return !v
	}
	return fresh
}

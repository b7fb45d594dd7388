package wire

import (
	"github.com/idemcheck/idemcheck/apispec"
)

// Redacted returns x with every secret replaced, request and
// response (a server may echo a credential back), for the evidence.
func (x Exchange) Redacted(t *apispec.Target) Exchange {
	if !t.HasSecrets() {
		return x
	}
	x.Request.URL = t.Redact(x.Request.URL)
	x.Request.Header = t.RedactHeader(x.Request.Header)
	x.Request.Body = t.RedactBytes(x.Request.Body)
	if x.Response != nil {
		r := *x.Response
		r.Header = t.RedactHeader(r.Header)
		r.Body = t.RedactBytes(r.Body)
		x.Response = &r
	}
	x.Error = t.Redact(x.Error)
	return x
}

package chaos

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/idemcheck/idemcheck/internal/grpccode"
)

// status answers an error status without forwarding, like Envoy's abort:
// a definite failure, nothing ran upstream.
type status struct{ code int }

func init() {
	register("status", func(p params) (Fault, error) {
		code, err := p.intValue("code", 503)
		if err == nil && (code < 400 || code > 599) {
			err = fmt.Errorf("token \"code=%d\": want a 4xx or 5xx status", code)
		}
		return status{code}, err
	})
}

func (status) Kind() string { return "status" }

// callStatus is status for a gRPC call: the code (a name or a number,
// default UNAVAILABLE), like Envoy's gRPC abort; nothing ran upstream.
type callStatus struct{ code codes.Code }

func init() {
	registerGRPC("status", func(p params) (grpcFault, error) {
		v, ok := p.take("code")
		if !ok {
			return callStatus{codes.Unavailable}, nil
		}
		c, known := grpccode.ByName(strings.ToUpper(v))
		if n, err := strconv.Atoi(v); err == nil && !known {
			// A number is known when the table names it.
			c, known = n, grpccode.Name(n) != strconv.Itoa(n)
		}
		if !known || c == 0 {
			return nil, fmt.Errorf("token %q: want a gRPC code other than OK (UNAVAILABLE, ABORTED, or its number)", "code="+v)
		}
		return callStatus{codes.Code(c)}, nil
	})
}

func (f callStatus) serveGRPC(x *callExchange) error {
	return x.answer(f.code, "", "injected by idemcheck; the call was not forwarded")
}

func (f status) Serve(x *Relay) {
	x.answer(f.code, "", "injected by idemcheck; the request was not forwarded")
}

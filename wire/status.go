package wire

import (
	"slices"
	"strconv"

	"github.com/idemcheck/idemcheck/apispec"
)

// GRPCCode is the code of a gRPC answer (its Grpc-Status); ok is false
// for an HTTP answer, or none.
func (r Resp) GRPCCode() (code int, ok bool) {
	if r.Err != nil {
		return 0, false
	}
	c, err := strconv.Atoi(r.Header.Get("Grpc-Status"))
	return c, err == nil
}

// HasStatus reports whether r answered s: an HTTP status is r's status
// (a gRPC answer's as google.rpc.Code maps its code); a gRPC code
// (apispec.GRPCStatus) is a gRPC answer's exact code, or the HTTP status
// the code maps to for an HTTP answer.
func (r Resp) HasStatus(s int) bool {
	if r.Err != nil {
		return false
	}
	if c, ok := apispec.StatusCode(s); ok {
		if got, isGRPC := r.GRPCCode(); isGRPC {
			return got == c
		}
	}
	return r.Status == apispec.HTTPStatusOf(s)
}

// StatusIn reports whether r answered one of set (HasStatus).
func (r Resp) StatusIn(set []int) bool { return slices.ContainsFunc(set, r.HasStatus) }

// SameStatus reports whether r and o answered the same status, and, both
// gRPC answers, the same code.
func (r Resp) SameStatus(o Resp) bool {
	a, aok := r.GRPCCode()
	b, bok := o.GRPCCode()
	return r.Status == o.Status && aok == bok && a == b
}

// StatusText is r's status as verdicts print it: 409, or ABORTED (409)
// for a gRPC answer.
func (r Resp) StatusText() string {
	s := strconv.Itoa(r.Status)
	if c, ok := r.GRPCCode(); ok {
		s = apispec.GRPCCodeName(c) + " (" + s + ")"
	}
	return s
}

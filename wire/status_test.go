package wire

import (
	"errors"
	"net/http"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
)

// TestStatusCodes: a status named by its gRPC code matches a gRPC answer
// by its exact code and an HTTP answer by the code's HTTP mapping; a
// number matches the HTTP status either way.
func TestStatusCodes(t *testing.T) {
	grpcAns := func(code string) Resp { // INVALID_ARGUMENT or FAILED_PRECONDITION: 400
		return Resp{Status: 400, Header: http.Header{"Grpc-Status": {code}}}
	}
	invalid, precondition := grpcAns("3"), grpcAns("9")
	plain := Resp{Status: 400, Header: http.Header{}}
	invalidArg := apispec.GRPCStatus(3)
	for _, c := range []struct {
		name string
		r    Resp
		s    int
		want bool
	}{
		{"exact code", invalid, invalidArg, true},
		{"another code of the same HTTP status", precondition, invalidArg, false},
		{"a number: the HTTP mapping", precondition, 400, true},
		{"a code on an HTTP answer: its mapping", plain, invalidArg, true},
		{"a transport error", Resp{Err: errors.New("x")}, 400, false},
	} {
		if got := c.r.HasStatus(c.s); got != c.want {
			t.Errorf("%s: HasStatus %v, want %v", c.name, got, c.want)
		}
	}
	if invalid.SameStatus(precondition) || !invalid.SameStatus(grpcAns("3")) || plain.SameStatus(invalid) {
		t.Error("SameStatus: the same HTTP status and, for gRPC answers, the same code")
	}
	if s := precondition.StatusText(); s != "FAILED_PRECONDITION (400)" || plain.StatusText() != "400" {
		t.Errorf("StatusText %q", s)
	}
}

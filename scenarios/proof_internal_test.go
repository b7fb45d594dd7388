package scenarios

import (
	"net/http"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// TestSignalOf: the profile's mismatch and in-flight signals on every
// carrier, as the proof rule reads them (proof.go): an HTTP status, a
// gRPC code exactly (not the HTTP status it maps to), and the status a
// GraphQL or JSON-RPC answer's configured code stands for where the
// profile names none.
func TestSignalOf(t *testing.T) {
	preset := func(name string) *apispec.Profile {
		p, err := apispec.ProfileByName(name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	grpcAnswer := func(code string, status int) wire.Resp {
		return wire.Resp{Status: status, Header: http.Header{"Grpc-Status": {code}}}
	}
	gql := &apispec.Target{Carrier: apispec.CarrierGraphQL, Answers: &apispec.Answers{Mismatch: []string{"KEY_REUSED"}, InFlight: []string{"BUSY"}}}
	noCodes := &apispec.Target{Carrier: apispec.CarrierJSONRPC}
	lenient := preset("lenient")
	lenient.MismatchStatus, lenient.InFlightStatus = nil, nil
	for _, tc := range []struct {
		rule string
		t    *apispec.Target
		p    *apispec.Profile
		r    wire.Resp
		want string
	}{
		{"an HTTP mismatch status", &apispec.Target{}, preset("ietf"), wire.Resp{Status: 422}, "mismatch"},
		{"an HTTP in-flight status", &apispec.Target{}, preset("ietf"), wire.Resp{Status: 409}, "in-flight"},
		{"one status the profile names for both", &apispec.Target{}, preset("seeds"), wire.Resp{Status: 409}, "mismatch or in-flight"},
		{"the invalid-key status is no signal under ietf", &apispec.Target{}, preset("ietf"), wire.Resp{Status: 400}, ""},
		{"a success is no signal", &apispec.Target{}, preset("ietf"), wire.Resp{Status: 201}, ""},
		{"a gRPC in-flight code (ABORTED)", &apispec.Target{}, preset("aip-155"), grpcAnswer("10", 409), "in-flight"},
		{"another gRPC code mapping to the same HTTP status is none (FAILED_PRECONDITION is 400)", &apispec.Target{}, preset("aip-155"), grpcAnswer("9", 400), ""},
		{"a GraphQL answer's mismatch code where the profile names no status", gql, lenient, wire.Resp{Status: 422}, "mismatch"},
		{"a GraphQL answer's in-flight code where the profile names no status", gql, lenient, wire.Resp{Status: 409}, "in-flight"},
		{"a JSON-RPC answer with no codes configured signals nothing", noCodes, lenient, wire.Resp{Status: 422}, ""},
	} {
		e := &Env{Target: tc.t, Profile: tc.p}
		if got := e.signal(tc.r); got != tc.want {
			t.Errorf("%s: signal %q, want %q", tc.rule, got, tc.want)
		}
	}
}

package main

import (
	"strings"
	"testing"
)

// TestGRPCFacesRefuse: init --probe given a gRPC target refuses it in
// one line, exit 2, rather than aim an HTTP client at it. No server runs:
// the refusal comes before any call. (chaos and load drive gRPC targets:
// TestChaosGRPC, TestLoadGRPC.)
func TestGRPCFacesRefuse(t *testing.T) {
	cases := []struct {
		face string
		args []string
	}{
		{"init --probe", []string{"init", "--probe", "grpc://127.0.0.1:1/idemcheck.reference.v1.PaymentService/CreatePayment", "-o", "-"}},
	}
	for _, c := range cases {
		code, stderr := runCaptured(t, c.args...)
		want := c.face + ": gRPC targets are not supported yet (docs/grpc.md)"
		if code != 2 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", c.args, code, stderr, want)
		}
	}
}

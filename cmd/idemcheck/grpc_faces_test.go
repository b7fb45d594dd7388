package main

import (
	"strings"
	"testing"
)

// TestGRPCFacesRefuse: init --probe given a gRPC target refuses it in
// one line, exit 2, naming init --grpc, rather than aim an HTTP client
// at it. No server runs: the refusal comes before any call. (chaos and
// load drive gRPC targets: TestChaosGRPC, TestLoadGRPC.)
func TestGRPCFacesRefuse(t *testing.T) {
	code, stderr := runCaptured(t, "init", "--probe", "grpc://127.0.0.1:1/idemcheck.reference.v1.PaymentService/CreatePayment", "-o", "-")
	want := "a gRPC service is described by init --grpc grpc://127.0.0.1:1/"
	if code != 2 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("init --probe grpc://: exit %d, stderr %q; want 2 and one line with %q", code, stderr, want)
	}
}

package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// grpcManagedConfig is a config of a managed `idemcheck serve --grpc`
// (target_cmd) with a 1 s lease and the serve flags extra: the gRPC
// service on the harness's {port}, its effects oracle on httpAddr, fixed
// so that it stays where the config says across restarts.
func grpcManagedConfig(t *testing.T, httpAddr string, extra ...string) string {
	cmd := strings.Join(append([]string{testenv.BuildIdemcheck(t), "serve", "--addr", httpAddr, "--grpc", "127.0.0.1:{port}", "--lease", "1s"}, extra...), " ")
	return writeTemp(t, "grpc-managed.yaml", fmt.Sprintf(`base_url: grpc://127.0.0.1:{port}
target_cmd: %q
key: {field: request_id}
lease: 1s
principals:
  - {name: alice, metadata: {authorization: Bearer alice}}
  - {name: bob, metadata: {authorization: Bearer bob}}
oracle: {url: "http://%s/v1/effects?key={key}", pointer: /executions}
operations:
  - name: payments
    rpc: idemcheck.reference.v1.PaymentService/CreatePayment
    body: {parent: accounts/a1, payment: {amount: 1000, currency: USD}}
    id_pointer: /name
    variants:
      slow: {patch: {knobs: {delay_ms: 1500}}, duration: 1500ms}
profile:
  preset: aip-155
  overrides: {in_flight_status: ABORTED}
`, cmd, httpAddr))
}

// TestGRPCManagedNotGRPC: a managed gRPC target whose command serves
// HTTP, not gRPC, at {port} (the reference's HTTP API, HTTP/2 by prior
// knowledge too) is unreachable (4) in one line saying it did not answer
// gRPC: readiness is judged over gRPC. It waits out the 15 s bound.
func TestGRPCManagedNotGRPC(t *testing.T) {
	addr := testenv.FreeAddr(t)
	cfg := grpcManagedConfig(t, addr, "--h2c")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	httpOnly := strings.Replace(string(b), "--addr "+addr+" --grpc 127.0.0.1:{port}", "--addr 127.0.0.1:{port}", 1)
	res, results := runReport(t, "--config", writeTemp(t, "http-only.yaml", httpOnly), "--run", "lease/crash-recovers@payments")
	msg := strings.TrimSpace(res.stderr)
	if res.code != exitUnreachable || !strings.Contains(msg, "did not answer gRPC at grpc://127.0.0.1:") || strings.Contains(msg, "\n") || len(results) != 0 {
		t.Fatalf("exit %d, stderr %q, %d results; want exit %d, one line: did not answer gRPC", res.code, msg, len(results), exitUnreachable)
	}
}

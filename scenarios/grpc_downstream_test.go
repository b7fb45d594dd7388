package scenarios

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/grpcref"
	"github.com/idemcheck/idemcheck/target"
)

// TestGRPCDownstreamVariants: over gRPC, a variant the downstream double
// plays (a slow provider) reaches the double, though the key goes into a
// copy of the variant's body (its request_id). The reference service
// calls the double once per execution with the key as the reference.
func TestGRPCDownstreamVariants(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	doubleAddr := l.Addr().String()
	l.Close() // the double listens here once the run starts
	client := &http.Client{Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	svc, err := grpcref.New(grpcref.Options{TTL: time.Minute, Lease: 10 * time.Second, Executing: func(key string, _ bool) func() {
		// The provider call: as slow as the double holds it.
		resp, err := client.Post("http://"+doubleAddr+"/v1/payments", "application/json", strings.NewReader(fmt.Sprintf(`{"reference":%q}`, key)))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return func() {}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	g := grpc.NewServer()
	svc.Register(g)
	base := demotest.ServeGRPCServer(t, g)
	tg, p, err := target.ParseConfig([]byte(fmt.Sprintf(`base_url: %s
key: {field: request_id}
principals: [{name: alice, metadata: {authorization: Bearer alice}}]
downstream:
  listen: %s
  routes: [{name: payments, method: POST, path: /v1/payments, response: {status: 200}}]
oracle: {downstream: payments}
operations:
  - name: payments
    rpc: idemcheck.reference.v1.PaymentService/CreatePayment
    body: {parent: accounts/a1, payment: {amount: 1000, currency: USD}}
    id_pointer: /name
    variants:
      slow: {downstream: {route: payments, delay: 600ms}, duration: 600ms}
profile:
  preset: aip-155
  overrides: {key_required: true, in_flight_status: ABORTED, block_ok: false}
`, base, doubleAddr)))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), tg, p, RunOptions{Run: []string{"concurrent/in-flight-conflict"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Status != Pass {
		t.Fatalf("want a pass, the duplicate overlapping the slow charge:%s", verdicts(rep))
	}
}

package scenarios

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/grpcref"
	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
)

// TestGRPCDownstreamVariants: over gRPC, a variant the downstream double
// plays (a slow provider) reaches the double, though the key goes into a
// copy of the variant's body (its request_id). The reference service
// calls the double once per execution with the key as the reference.
func TestGRPCDownstreamVariants(t *testing.T) {
	rep := runDownstreamGRPC(t, "concurrent/in-flight-conflict")
	if len(rep.Results) != 1 || rep.Results[0].Status != Pass {
		t.Fatalf("want a pass, the duplicate overlapping the slow charge:%s", verdicts(rep))
	}
}

// TestGRPCLeaseTakeover: a service whose claim lapses before its slow
// charge ends lets the last-quarter duplicate take the key over and
// charge again; checking at completion that it still holds the key, it
// refuses the original. concurrent/in-flight-offsets fails it on the
// double's two charges before the original answered (it was inconclusive:
// "the slow variant did not succeed").
func TestGRPCLeaseTakeover(t *testing.T) {
	doubleAddr := testenv.FreeAddr(t)
	svc := &lapsingLease{lease: 900 * time.Millisecond, provider: "http://" + doubleAddr + "/v1/payments", claims: map[string]*lapsingClaim{}}
	t.Cleanup(svc.client.CloseIdleConnections)
	rep := runDownstream(t, servePayments(t, svc), doubleAddr, "1200ms", "concurrent/in-flight-offsets")
	if r := rep.Results[0]; r.Status != Fail || !strings.Contains(r.Observed, "received 2 calls of the key before the original answered") {
		t.Fatalf("want a fail on the takeover:%s", verdicts(rep))
	}
}

// lapsingLease is a payments service whose claim on a key lasts lease,
// however long the charge takes; a completion that lost its claim is
// ABORTED. Each charge calls provider with the key as its reference.
type lapsingLease struct {
	paymentsv1.UnimplementedPaymentServiceServer
	lease    time.Duration
	provider string
	client   http.Client
	mu       sync.Mutex
	claims   map[string]*lapsingClaim
}

type lapsingClaim struct {
	until time.Time
	reply *paymentsv1.Payment // set once completed
}

func (s *lapsingLease) CreatePayment(ctx context.Context, req *paymentsv1.CreatePaymentRequest) (*paymentsv1.Payment, error) {
	k := req.GetRequestId()
	s.mu.Lock()
	c := s.claims[k]
	switch {
	case c != nil && c.reply != nil:
		s.mu.Unlock()
		return c.reply, nil
	case c != nil && time.Now().Before(c.until):
		s.mu.Unlock()
		return nil, status.Error(codes.Aborted, "in progress")
	}
	mine := &lapsingClaim{until: time.Now().Add(s.lease)}
	s.claims[k] = mine
	s.mu.Unlock()
	resp, err := s.client.Post(s.provider, "application/json", strings.NewReader(fmt.Sprintf(`{"reference":%q}`, k)))
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claims[k] != mine {
		return nil, status.Error(codes.Aborted, "the claim lapsed")
	}
	mine.reply = &paymentsv1.Payment{Name: "payments/" + uuid.NewString(), Amount: req.GetPayment().GetAmount()}
	return mine.reply, nil
}

// runDownstreamGRPC serves the reference gRPC service, its executions
// calling a downstream double, and runs globs on it.
func runDownstreamGRPC(t *testing.T, globs ...string) *Report {
	doubleAddr := testenv.FreeAddr(t)
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
	return runDownstream(t, demotest.ServeGRPCServer(t, g), doubleAddr, "600ms", globs...)
}

// servePayments serves svc, with reflection, on a loopback gRPC server
// for the test; it returns its grpc:// base.
func servePayments(t *testing.T, svc paymentsv1.PaymentServiceServer) string {
	g := grpc.NewServer()
	paymentsv1.RegisterPaymentServiceServer(g, svc)
	reflection.Register(g)
	return demotest.ServeGRPCServer(t, g)
}

// runDownstream runs globs on the CreatePayment (AIP-155) of the service
// at base, whose executions call the double at doubleAddr with the key as
// reference; the slow variant holds them for slow.
func runDownstream(t *testing.T, base, doubleAddr, slow string, globs ...string) *Report {
	t.Helper()
	tg, p, err := apispec.ParseConfig([]byte(fmt.Sprintf(`base_url: %s
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
      slow: {downstream: {route: payments, delay: %s}, duration: %s}
profile:
  preset: aip-155
  overrides: {key_required: true, in_flight_status: ABORTED, block_ok: false}
`, base, doubleAddr, slow, slow)))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), tg, p, RunOptions{Run: globs})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestGRPCIDPointerName: an id_pointer naming a response field as the
// .proto does (create_time) finds nothing in the protojson answer
// (createTime); the one-line error gives the pointer by JSON names.
func TestGRPCIDPointerName(t *testing.T) {
	httpBase, grpcBase := demotest.ServeGRPC(t, demo.Options{TTL: time.Minute})
	cfg := strings.Replace(demotest.GRPCConfig(httpBase, grpcBase), "id_pointer: /name", "id_pointer: /create_time", 1)
	tg, p, err := apispec.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(t.Context(), tg, p, RunOptions{Run: []string{"replay/single-execution"}})
	if err == nil || !strings.Contains(err.Error(), "id_pointer /create_time: nothing there in the 200 body") ||
		!strings.HasSuffix(err.Error(), "the fields' JSON names: /createTime") {
		t.Fatalf("got %v, want the pointer by JSON names", err)
	}
}

// TestGRPCReplaysOtherKey: a service that answers a retry with the last
// reply it stored, whichever key it came under (a reply cache keyed
// without the key), fails replay/single-execution: its retries come
// after another key's request completed.
func TestGRPCReplaysOtherKey(t *testing.T) {
	doubleAddr := testenv.FreeAddr(t)
	svc := &lastReply{provider: "http://" + doubleAddr + "/v1/payments", seen: map[string]bool{}}
	t.Cleanup(svc.client.CloseIdleConnections)
	rep := runDownstream(t, servePayments(t, svc), doubleAddr, "600ms", "replay/single-execution")
	if r := rep.Results[0]; r.Status != Fail || !strings.Contains(r.Observed, "2 distinct ids") {
		t.Fatalf("want a fail on the other key's id:%s", verdicts(rep))
	}
}

// lastReply executes a key's first request (a provider call with the key
// as its reference) and answers any later one with the newest reply.
type lastReply struct {
	paymentsv1.UnimplementedPaymentServiceServer
	provider string
	client   http.Client
	mu       sync.Mutex
	seen     map[string]bool
	last     *paymentsv1.Payment
}

func (s *lastReply) CreatePayment(_ context.Context, req *paymentsv1.CreatePaymentRequest) (*paymentsv1.Payment, error) {
	k := req.GetRequestId()
	s.mu.Lock()
	if s.seen[k] {
		defer s.mu.Unlock()
		return s.last, nil
	}
	s.seen[k] = true
	s.mu.Unlock()
	resp, err := s.client.Post(s.provider, "application/json", strings.NewReader(fmt.Sprintf(`{"reference":%q}`, k)))
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	p := &paymentsv1.Payment{Name: "payments/" + uuid.NewString(), Amount: req.GetPayment().GetAmount()}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = p
	return p, nil
}

package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
)

// TestGRPCListOracle: an HTTP listing of the payments a gRPC service
// created is an oracle beside a gRPC target, as beside an HTTP one (the
// URL absolute: a gRPC target has no HTTP base). Counting by the listed
// request_id, a service that stores and replays each key's payment passes
// the effect-counting cases; one that executes every call fails them, the
// list counting its executions.
func TestGRPCListOracle(t *testing.T) {
	for _, row := range []struct {
		name    string
		replays bool
		want    Status
	}{
		{"replays", true, Pass},
		{"executes every call", false, Fail},
	} {
		t.Run(row.name, func(t *testing.T) {
			svc := &listedPayments{replays: row.replays, byKey: map[string]*paymentsv1.Payment{}}
			list := httptest.NewServer(svc)
			t.Cleanup(list.Close)
			tg, p, err := apispec.ParseConfig([]byte(fmt.Sprintf(`base_url: %s
key: {field: request_id}
principals: [{name: alice, metadata: {authorization: Bearer alice}}]
oracle: {url: "%s/payments", count: {array: /data, where: /requestId}}
operations:
  - name: payments
    rpc: idemcheck.reference.v1.PaymentService/CreatePayment
    body: {parent: accounts/a1, payment: {amount: 1000, currency: USD}}
    id_pointer: /name
profile:
  preset: aip-155
  overrides: {mismatch_status: INVALID_ARGUMENT}
`, servePayments(t, svc), list.URL)))
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{"replay/single-execution", "mismatch/original-survives", "concurrent/same-key-burst"}
			rep, err := Run(t.Context(), tg, p, RunOptions{Run: ids})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Notes) > 0 {
				t.Errorf("notes %q: want none (the list counts each key)", rep.Notes)
			}
			for _, r := range rep.Results {
				if r.Status != row.want {
					t.Errorf("%s: %s %q %s; want %s", r.Name(), r.Status, r.Observed, r.Reason, row.want)
				}
				// The executions are the list's count (replay/single-
				// execution on a failing service decides by ids first).
				if (row.want == Pass || r.ID != "replay/single-execution") && !strings.Contains(r.Observed, "(oracle)") {
					t.Errorf("%s: %q; want the list's count", r.Name(), r.Observed)
				}
			}
		})
	}
}

// listedPayments is a payments service whose executions an HTTP listing
// shows (GET /payments: {"data": [{"requestId", "name"}]}); with replays
// it answers a used request_id with its stored payment (a changed amount
// is refused), else it executes every call.
type listedPayments struct {
	paymentsv1.UnimplementedPaymentServiceServer
	replays bool
	mu      sync.Mutex // one call at a time: no call races another's claim
	byKey   map[string]*paymentsv1.Payment
	listed  []map[string]string
}

func (s *listedPayments) CreatePayment(_ context.Context, req *paymentsv1.CreatePaymentRequest) (*paymentsv1.Payment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := req.GetRequestId()
	if p, ok := s.byKey[k]; ok && s.replays {
		if p.GetAmount() != req.GetPayment().GetAmount() {
			return nil, status.Error(codes.InvalidArgument, "request_id reused with another request")
		}
		return proto.Clone(p).(*paymentsv1.Payment), nil
	}
	p := &paymentsv1.Payment{Name: "payments/" + uuid.NewString(), Amount: req.GetPayment().GetAmount(), Currency: req.GetPayment().GetCurrency()}
	s.byKey[k] = p
	s.listed = append(s.listed, map[string]string{"requestId": k, "name": p.GetName()})
	return proto.Clone(p).(*paymentsv1.Payment), nil
}

func (s *listedPayments) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/payments" {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": s.listed})
}

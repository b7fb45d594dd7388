package scenarios

import (
	"context"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
)

// unknownOnReplay answers every call after a request_id's first with its
// Payment carrying a field the schema does not know (number 99): what a
// replay served from bytes stored under another version of the message
// sends. protojson leaves it out; the binary encoding has it.
func unknownOnReplay() grpc.ServerOption {
	var mu sync.Mutex
	seen := map[string]bool{}
	return grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		r, isPayment := req.(*paymentsv1.CreatePaymentRequest)
		p, ok := resp.(*paymentsv1.Payment)
		if err != nil || !isPayment || !ok {
			return resp, err
		}
		mu.Lock()
		again := seen[r.GetRequestId()]
		seen[r.GetRequestId()] = true
		mu.Unlock()
		if again {
			p = proto.CloneOf(p)
			p.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
		}
		return p, nil
	})
}

// TestGRPCReplayBinaryAndMetadata: over gRPC a replay is compared, as the
// profile asks, byte for byte in its binary encoding (replay_binary: a
// field protojson does not show is caught by replay/same-body, and missed
// without it), in the metadata it names (replay_metadata: the reference's
// replay-drops-headers is caught by replay/same-headers, in
// TestGRPCDefects) and by its replay marker (replay/marker-header: a
// marker the service does not send is a miss).
func TestGRPCReplayBinaryAndMetadata(t *testing.T) {
	t.Run("binary", func(t *testing.T) {
		t.Parallel()
		for _, binary := range []bool{true, false} {
			tg, p := grpcTarget(t, "aip", nil, unknownOnReplay())
			p.ReplayBinary = binary
			rep, err := Run(t.Context(), tg, p, RunOptions{Run: []string{"replay/same-body"}})
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Results[0]
			switch {
			case binary && (r.Status != Warn || !strings.Contains(r.Observed, "binary encodings differ")):
				t.Errorf("replay_binary: %s, want warn on the binary encodings:%s", r.Status, verdicts(rep))
			case !binary && r.Status != Pass:
				t.Errorf("without replay_binary (protojson only): %s, want pass:%s", r.Status, verdicts(rep))
			}
		}
	})
	t.Run("marker", func(t *testing.T) {
		t.Parallel()
		tg, p := grpcTarget(t, "aip", nil)
		rep, err := Run(t.Context(), tg, p, RunOptions{Run: []string{"replay/marker-header", "replay/same-headers"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Results {
			if r.Status != Pass || !strings.Contains(r.Observed, map[string]string{"replay/marker-header": "idempotent-replayed: true", "replay/same-headers": "x-resource-name"}[r.ID]) {
				t.Errorf("%s: %s, want pass naming the metadata:%s", r.ID, r.Status, verdicts(rep))
			}
		}
		p.ReplayHeader = "x-replayed"
		rep, err = Run(t.Context(), tg, p, RunOptions{Run: []string{"replay/marker-header"}})
		if err != nil {
			t.Fatal(err)
		}
		if r := rep.Results[0]; r.Status != Warn {
			t.Errorf("a marker the service does not send: %s, want warn:%s", r.Status, verdicts(rep))
		}
	})
}

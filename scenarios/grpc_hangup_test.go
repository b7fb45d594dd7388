package scenarios

import "testing"

// TestGRPCExpiryEdge: the sweep across the TTL edge over gRPC passes on
// the reference gRPC service.
func TestGRPCExpiryEdge(t *testing.T) {
	tg, p := grpcTarget(t, "aip", nil)
	rep, err := Run(t.Context(), tg, p, RunOptions{Run: []string{"expiry/edge-burst"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Status != Pass {
		t.Fatalf("want one pass:%s", verdicts(rep))
	}
}

// TestGRPCClientHangup: over gRPC the proxy cancels the slow call halfway
// through; the reference gRPC service then abandons it or completes it,
// and either way the retries get one outcome from one execution.
func TestGRPCClientHangup(t *testing.T) {
	tg, p := grpcTarget(t, "aip", nil)
	rep, err := Run(t.Context(), tg, p, RunOptions{Run: []string{"lost/client-hangup"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Status != Pass {
		t.Fatalf("want one pass:%s", verdicts(rep))
	}
	t.Logf("%s", verdicts(rep))
}

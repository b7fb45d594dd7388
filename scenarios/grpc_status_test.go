package scenarios

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// recode answers every error of code from with code to instead, message
// kept: a service that answers a code in the class the profile's code maps
// to, but not that code.
func recode(from, to codes.Code) grpc.ServerOption {
	return grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if st := status.Convert(err); err != nil && st.Code() == from {
			return resp, status.Error(to, st.Message())
		}
		return resp, err
	})
}

// TestGRPCExactCodes: a status the profile names by its gRPC code is
// judged by the exact code, not by the HTTP status both map to: a reused
// key answered FAILED_PRECONDITION where the profile says
// INVALID_ARGUMENT (both 400), and a duplicate in flight answered
// ALREADY_EXISTS where it says ABORTED (both 409), miss the SHOULD; the
// verdicts name the codes.
func TestGRPCExactCodes(t *testing.T) {
	for _, tc := range []struct {
		id       string
		from, to codes.Code
		// named is the code the profile names, seen in the pass;
		// instead the one answered in its place, seen in the warn.
		named, instead, expected string
	}{
		{"mismatch/changed-body", codes.InvalidArgument, codes.FailedPrecondition, "INVALID_ARGUMENT (400)", "FAILED_PRECONDITION (400)", "[INVALID_ARGUMENT] for each changed request"},
		{"concurrent/in-flight-conflict", codes.Aborted, codes.AlreadyExists, "ABORTED (409)", "ALREADY_EXISTS (409)", "[ABORTED] while in flight"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			t.Parallel()
			for _, opts := range [][]grpc.ServerOption{nil, {recode(tc.from, tc.to)}} {
				tg, p := grpcTarget(t, "aip", nil, opts...)
				rep, err := Run(t.Context(), tg, p, RunOptions{Run: []string{tc.id}})
				if err != nil {
					t.Fatal(err)
				}
				r := rep.Results[0]
				switch {
				case opts == nil && (r.Status != Pass || !strings.Contains(r.Observed, tc.named)):
					t.Errorf("answered %s: %s, want pass:%s", tc.named, r.Status, verdicts(rep))
				case opts != nil && (r.Status != Warn || !strings.Contains(r.Observed, tc.instead) || !strings.HasPrefix(r.Expected, tc.expected)):
					t.Errorf("answered %s: %s, want warn expecting %q:%s\n  expected: %s", tc.instead, r.Status, tc.expected, verdicts(rep), r.Expected)
				}
			}
		})
	}
}

// TestGRPCNoMismatchCode: where the profile names no mismatch status (no
// gRPC document names one: the presets leave it empty), any refusal that
// executed nothing meets it; a replay or an execution would still fail.
func TestGRPCNoMismatchCode(t *testing.T) {
	tg, p := grpcTarget(t, "aip", nil)
	p.MismatchStatus = nil
	rep, err := Run(t.Context(), tg, p, RunOptions{Run: []string{"mismatch/changed-body"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Status != Pass || !strings.Contains(r.Observed, "INVALID_ARGUMENT (400) (the profile names no mismatch status: any error)") {
		t.Errorf("%s, want pass naming the code:%s", r.Status, verdicts(rep))
	}
}

package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/target"
)

// grpcConfig is a config of the reference gRPC service's CreatePayment
// (AIP-155) or CreateRefund (AEP-155) at grpcBase, counted by the HTTP
// effects oracle at httpBase, under the aip-155 or aep-155 preset with
// the reference's own policy as overrides.
func grpcConfig(httpBase, grpcBase string, aep bool) string {
	rpc, key, preset := "CreatePayment", "{field: request_id}", "aip-155"
	if aep {
		rpc, key, preset = "CreateRefund", "{field: idempotency_key, first_sent: true}", "aep-155"
	}
	return fmt.Sprintf(`base_url: %s
key: %s
principals:
  - {name: alice, metadata: {authorization: Bearer alice}}
  - {name: bob, metadata: {authorization: Bearer bob}}
oracle: {url: "%s/v1/effects?key={key}", pointer: /executions}
operations:
  - name: payments
    rpc: idemcheck.reference.v1.PaymentService/%s
    body: {parent: accounts/a1, payment: {amount: 1000, currency: USD}}
    id_pointer: /name
    mutations: [{name: changed-amount, patch: {payment: {amount: 1001}}}]
    variants:
      slow: {patch: {knobs: {delay_ms: 600}}, duration: 600ms}
      business_error: {patch: {knobs: {fail: decline}}, status: FAILED_PRECONDITION}
      transient_error: {patch: {knobs: {fail: transient}}, status: UNAVAILABLE}
      invalid: {patch: {payment: {amount: -1}}, status: INVALID_ARGUMENT}
profile:
  preset: %s
  overrides: {key_required: true, missing_status: INVALID_ARGUMENT, mismatch_status: INVALID_ARGUMENT, in_flight_status: ABORTED, block_ok: false, stale_replay_on_mismatch: false,
    cache_4xx_business: true, cache_5xx: false, cache_validation: false}
`, grpcBase, key, httpBase, rpc, preset)
}

// runGRPC runs the cases that run over gRPC; rounds bounds the same-key
// burst's rounds (0: the profile's), strict makes a SHOULD miss fail.
func runGRPC(t *testing.T, aep, strict bool, rounds int, defects ...reference.Defect) *Report {
	t.Helper()
	httpBase, grpcBase := demotest.ServeGRPC(t, demo.Options{TTL: 5 * time.Second, Lease: 5 * time.Second}, defects...)
	tg, p, err := target.ParseConfig([]byte(grpcConfig(httpBase, grpcBase, aep)))
	if err != nil {
		t.Fatal(err)
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range grpcReady {
			if !yield(id) {
				return
			}
		}
	})
	p.BurstRounds = rounds
	rep, err := Run(t.Context(), tg, p, RunOptions{Run: ids, Strict: strict})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func verdicts(rep *Report) string {
	var b strings.Builder
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "\n  %s %s: %s %s", r.Status, r.Name(), r.Observed, r.Reason)
	}
	return b.String()
}

// TestGRPCReference: the reference gRPC service, AIP-155 and AEP-155
// methods, passes every case that runs over gRPC.
func TestGRPCReference(t *testing.T) {
	for _, aep := range []bool{false, true} {
		t.Run(fmt.Sprintf("aep=%v", aep), func(t *testing.T) {
			t.Parallel()
			rep := runGRPC(t, aep, false, 0)
			if ok, problems := rep.Outcome(); !ok || len(rep.Results) != len(grpcReady) {
				t.Fatalf("%d results, problems %v:%s", len(rep.Results), problems, verdicts(rep))
			}
			// What the reference's per-key oracle cannot count (a keyless
			// call) is unverifiable, as over HTTP; the reference requires
			// a key, so the optional-key case skips by profile.
			for _, r := range rep.Results {
				switch {
				case r.Status == Pass:
				case r.ID == "missing/rejected" && r.Status == Unverifiable:
				case r.ID == "missing/optional-executes" && r.Status == Skip && !strings.Contains(r.Reason, "gRPC"):
				default:
					t.Errorf("%s: %s, want pass:%s", r.Name(), r.Status, verdicts(rep))
				}
			}
		})
	}
}

// TestGRPCDefects: each reference defect with a gRPC form fails the case
// that exists to catch it.
func TestGRPCDefects(t *testing.T) {
	for _, tc := range []struct {
		defect reference.Defect
		strict bool // a SHOULD's miss
		fails  []string
	}{
		{reference.NoFingerprint, false, []string{"mismatch/changed-body"}},
		{reference.NoInflightLock, false, []string{"concurrent/in-flight-conflict", "concurrent/in-flight-offsets", "concurrent/same-key-burst"}},
		{reference.NoUserScope, false, []string{"scope/other-user-in-flight", "scope/other-user-isolated"}},
		{reference.MissingKeyPassthrough, true, []string{"missing/rejected", "syntax/empty-key"}},
		{reference.NoCache4xx, true, []string{"errors/business-error-kept", "replay/business-error"}},
		{reference.Cache5xx, true, []string{"errors/failure-releases-key", "errors/transient-5xx"}},
	} {
		t.Run(string(tc.defect), func(t *testing.T) {
			t.Parallel()
			rep := runGRPC(t, false, tc.strict, 1, tc.defect)
			var failed []string
			for _, r := range rep.Results {
				if r.Status == Fail || (tc.strict && r.Status == Warn) {
					failed = append(failed, r.ID)
				}
			}
			if ok, _ := rep.Outcome(); ok || !slices.Equal(failed, tc.fails) {
				t.Fatalf("caught by %v, want %v:%s", failed, tc.fails, verdicts(rep))
			}
		})
	}
}

// TestGRPCPlanSkips: a gRPC target's plan skips every case not run over
// gRPC, saying why.
func TestGRPCPlanSkips(t *testing.T) {
	tg, p, err := target.ParseConfig([]byte(grpcConfig("http://127.0.0.1:1", "grpc://127.0.0.1:2", false)))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := Plan(tg, p, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range pl {
		switch {
		case grpcReady[in.ID] && strings.Contains(in.Skip, "gRPC"):
			t.Errorf("%s: skipped (%s), but it runs over gRPC", in.Name(), in.Skip)
		case !grpcReady[in.ID] && in.Supplied && in.Skip == "":
			t.Errorf("%s: would run over gRPC with HTTP's rules", in.Name())
		}
		if in.ID == "problem/problem-json" && !strings.HasPrefix(in.Skip, "does not apply to gRPC: ") {
			t.Errorf("problem/problem-json: %q", in.Skip)
		}
	}
}

package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/grpcref"
)

// grpcConfig is a config of the reference gRPC service at grpcBase,
// counted by the HTTP effects oracle at httpBase, with the reference's own
// policy as overrides, by carrier: "aip" CreatePayment's request_id
// (aip-155), "aep" CreateRefund's idempotency_key (aep-155), "metadata"
// both methods keyed by x-idempotency-key (grpc-metadata; two operations,
// for scope/other-endpoint).
func grpcConfig(httpBase, grpcBase, carrier string) string {
	rpc, key, preset, second, expiry := "CreatePayment", "{field: request_id}", "aip-155", "", "fresh"
	switch carrier {
	case "aep":
		// AEP-155 refuses an expired key (its first_sent): never fresh.
		rpc, key, preset, expiry = "CreateRefund", "{field: idempotency_key, first_sent: true}", "aep-155", "unknown"
	case "metadata":
		key, preset = "{metadata: x-idempotency-key}", "grpc-metadata"
		second = `
  - name: refunds
    rpc: idemcheck.reference.v1.PaymentService/CreateRefund
    body: {parent: accounts/a1, payment: {amount: 500, currency: USD}}
    id_pointer: /name`
	}
	return fmt.Sprintf(`base_url: %s
key: %s
ttl: 3s
lease: 3s
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
      large: {patch: {knobs: {pad_bytes: 1048576}}}
      crash: {patch: {knobs: {fail: crash}}, status: INTERNAL}%s
profile:
  preset: %s
  overrides: {key_required: true, missing_status: INVALID_ARGUMENT, mismatch_status: INVALID_ARGUMENT, in_flight_status: ABORTED, block_ok: false, stale_replay_on_mismatch: false,
    cache_4xx_business: true, cache_5xx: false, cache_validation: false, scope_endpoint: independent, expiry: %s, key_max_len: 36,
    replay_header: idempotent-replayed, replay_header_value: "true", replay_metadata: [x-resource-name], replay_binary: true}
`, grpcBase, key, httpBase, rpc, second, preset, expiry)
}

// grpcTarget serves the reference gRPC service with defects (and the
// server options opts) for the test and returns grpcConfig's target of it.
func grpcTarget(t *testing.T, carrier string, defects []reference.Defect, opts ...grpc.ServerOption) (*apispec.Target, *apispec.Profile) {
	t.Helper()
	httpBase, g := demotest.GRPCServer(t, demo.Options{TTL: 3 * time.Second, Lease: 3 * time.Second}, defects, opts...)
	grpcBase := demotest.ServeGRPCServer(t, g)
	tg, p, err := apispec.ParseConfig([]byte(grpcConfig(httpBase, grpcBase, carrier)))
	if err != nil {
		t.Fatal(err)
	}
	return tg, p
}

// runGRPC runs the cases that run over gRPC (the expiry family, which
// waits out the TTL, only when expiry); rounds bounds the same-key
// burst's rounds (0: the profile's), strict makes a SHOULD miss fail.
func runGRPC(t *testing.T, carrier string, expiry, strict bool, rounds int, defects []reference.Defect, opts ...grpc.ServerOption) *Report {
	t.Helper()
	tg, p := grpcTarget(t, carrier, defects, opts...)
	var ids []string
	for _, id := range grpcRuns() {
		if expiry || !strings.HasPrefix(id, "expiry/") {
			ids = append(ids, id)
		}
	}
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
// methods and a metadata key, passes every case that runs over gRPC.
func TestGRPCReference(t *testing.T) {
	for _, carrier := range []string{"aip", "aep", "metadata"} {
		t.Run(carrier, func(t *testing.T) {
			t.Parallel()
			rep := runGRPC(t, carrier, true, false, 0, nil)
			ops := 1
			if carrier == "metadata" {
				ops = 2
			}
			if ok, problems := rep.Outcome(); !ok || len(rep.Results) != ops*len(grpcRuns()) {
				t.Fatalf("%d results, problems %v:%s", len(rep.Results), problems, verdicts(rep))
			}
			// What the reference's per-key oracle cannot count (a keyless
			// call) is unverifiable, as over HTTP; the reference requires
			// a key, so the optional-key case skips by profile.
			for _, r := range rep.Results {
				switch {
				case r.Status == Pass:
				case r.ID == "missing/rejected" && r.Status == Unverifiable:
				case r.Status == Skip && !strings.Contains(r.Reason, "gRPC") && (r.ID == "missing/optional-executes" ||
					// One operation (no other endpoint); refunds declare no
					// variants.
					(r.ID == "scope/other-endpoint" && carrier != "metadata") ||
					// key_min_len unspecified in every gRPC preset.
					r.ID == "security/low-entropy-keys" ||
					(r.Operation == "refunds" && strings.HasPrefix(r.Reason, "config does not supply")) ||
					// The reference's knobs cannot make a call hang.
					(r.ID == "crash/handler-timeout" && strings.HasPrefix(r.Reason, "config does not supply: timeout")) ||
					// No volatile field declared (TestGRPCVolatileFields
					// declares one); the slow variant within the lease
					// (TestGRPCLease shortens it); no managed target
					// (cmd/idemcheck TestLeaseCrashRecovers).
					(r.ID == "replay/volatile-fields" && strings.Contains(r.Reason, "volatile_fields is empty")) ||
					(r.ID == "lease/slow-outlives-lease" && strings.Contains(r.Reason, "does not outlive the declared lease")) ||
					(r.ID == "lease/crash-recovers" && slices.Contains(r.Missing, NeedTargetCmd))):
				case r.Status == Skip && carrier == "aep" && strings.HasPrefix(r.Reason, "does not apply to an AEP-155 key"):
				case r.Status == Skip && carrier != "metadata" && strings.HasPrefix(r.Reason, "does not apply to a key in a message field"):
				// AEP-155's first_sent: only its key has one.
				case r.Status == Skip && carrier != "aep" && slices.Contains(r.Missing, NeedFirstSent):
				// One server: TestGRPCReplicas runs the replicas/ cases.
				case r.Status == Skip && slices.Contains(r.Missing, NeedReplicas):
				// No events: section here (TestGRPCOutbox runs the outbox cases).
				case r.Status == Skip && slices.Contains(r.Missing, NeedEvents):
				case r.Status == Skip && r.Operation == "refunds" && strings.HasPrefix(r.ID, "lost/") && strings.Contains(r.Reason, "declares none"):
				// Creates, not updates: TestGRPCSetup runs the update case.
				case r.Status == Skip && r.ID == "update/after-other-key" && strings.HasPrefix(r.Reason, "does not apply to a create"):
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
	type row struct {
		defect  reference.Defect
		carrier string
		strict  bool // a SHOULD's miss
		fails   []string
		warns   []string // when set, without strict: the SHOULDs missed beside the failed MUSTs
	}
	rows := []row{
		{reference.NoFingerprint, "aip", false, []string{"mismatch/changed-body", "mismatch/repeat-fails-again"}, nil},
		{reference.NoFingerprint, "aep", false, []string{"mismatch/changed-body", "mismatch/repeat-fails-again"}, nil},
		{reference.NoInflightLock, "aip", false, []string{"concurrent/in-flight-conflict", "concurrent/in-flight-offsets", "concurrent/same-key-burst", "lost/retry-storm"}, nil},
		{reference.NoUserScope, "aip", false, []string{"scope/other-user-in-flight", "scope/other-user-isolated", "security/cross-principal-guess"}, nil},
		{reference.MissingKeyPassthrough, "aip", true, []string{"missing/rejected", "missing/repeat-fails-again", "syntax/empty-key"}, nil},
		{reference.NoCache4xx, "aip", true, []string{"errors/business-error-kept", "replay/business-error"}, nil},
		{reference.Cache5xx, "aip", true, []string{"errors/failure-releases-key", "errors/transient-5xx"}, nil},
		{reference.NoEndpointScope, "metadata", true, []string{"scope/other-endpoint", "scope/other-endpoint"}, nil},
		{reference.ReplayDropsHeaders, "aip", true, []string{"replay/same-headers"}, nil},
		// The 1 MiB answer stored cut at 64 KiB no longer decodes: the
		// replay is DATA_LOSS.
		{reference.ReplayTruncatesBody, "aip", true, []string{"fidelity/large-body"}, nil},
		// The crashed call's key stays in flight past the declared lease.
		{reference.FailureWedgesKey, "aip", false, []string{"crash/handler-crash"}, nil},
		// AEP-155's "must reject" expired and future keys fail without
		// strict; the changed first_sent replayed is a SHOULD's miss.
		{reference.FirstSentIgnored, "aep", false, []string{"syntax/first-sent-expired", "syntax/first-sent-future"}, []string{"mismatch/changed-body"}},
	}
	// Every defect the gRPC service plays has its row (the event defects,
	// which need a broker, in TestGRPCOutbox), or a test of its own where
	// the in-process catalog cannot show it.
	elsewhere := map[reference.Defect]string{
		reference.LeaseNeverExpires: "cmd/idemcheck TestLeaseCrashRecovers: a managed target killed mid-flight",
	}
	for _, d := range reference.Defects() {
		if grpcref.Supports(d.Defect) && !d.Defect.NeedsEvents() && elsewhere[d.Defect] == "" && !slices.ContainsFunc(rows, func(r row) bool { return r.defect == d.Defect }) {
			t.Errorf("%s: the gRPC reference plays it, and no row here checks it is caught", d.Defect)
		}
	}
	// Cases that catch a row's defect too when the run is slow: a true
	// catch, never required. Without the in-flight lock the hang-up's
	// retry executes again when it comes while the slowed handler still
	// runs (it waits 1.5x the slow variant, which a loaded machine stretches).
	alsoCaught := map[reference.Defect][]string{reference.NoInflightLock: {"lost/client-hangup"}}
	for _, tc := range rows {
		t.Run(string(tc.defect)+"/"+tc.carrier, func(t *testing.T) {
			t.Parallel()
			rep := runGRPC(t, tc.carrier, false, tc.strict, 1, []reference.Defect{tc.defect})
			var failed, warned []string
			for _, r := range rep.Results {
				switch {
				case (r.Status == Fail || (tc.strict && r.Status == Warn)) && slices.Contains(alsoCaught[tc.defect], r.ID):
				case r.Status == Fail || (tc.strict && r.Status == Warn):
					failed = append(failed, r.ID)
				case r.Status == Warn:
					warned = append(warned, r.ID)
				}
			}
			if ok, _ := rep.Outcome(); ok || !slices.Equal(failed, tc.fails) || (tc.warns != nil && !slices.Equal(warned, tc.warns)) {
				t.Fatalf("caught by %v (warned %v), want %v (%v):%s", failed, warned, tc.fails, tc.warns, verdicts(rep))
			}
		})
	}
}

// TestGRPCPlanSkips: a gRPC target's plan skips every case not run over
// gRPC, saying why.
func TestGRPCPlanSkips(t *testing.T) {
	tg, p, err := apispec.ParseConfig([]byte(grpcConfig("http://127.0.0.1:1", "grpc://127.0.0.1:2", "aip")))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := Plan(tg, p, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runs := grpcRuns()
	for _, in := range pl {
		switch {
		case slices.Contains(runs, in.ID) && strings.Contains(in.Skip, "gRPC"):
			t.Errorf("%s: skipped (%s), but it runs over gRPC", in.Name(), in.Skip)
		case !slices.Contains(runs, in.ID) && in.Supplied && in.Skip == "":
			t.Errorf("%s: would run over gRPC with HTTP's rules", in.Name())
		}
		if in.ID == "problem/problem-json" && !strings.HasPrefix(in.Skip, "does not apply to gRPC: ") {
			t.Errorf("problem/problem-json: %q", in.Skip)
		}
	}
}

// grpcRuns are the IDs of the cases that run over a gRPC target with a
// metadata key (Case.Unfit over its carrier says nothing).
func grpcRuns() []string {
	tg := &apispec.Target{BaseURL: "grpc://127.0.0.1:1"}
	var ids []string
	for _, c := range Catalog() {
		if c.unfit(carrierOf(tg), tg) == "" {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

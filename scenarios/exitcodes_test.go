package scenarios_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// violation is a build that breaks what one case checks: a reference
// defect (defectMatrix's rows, and violatedBy), or another server.
type violation struct {
	defect string
	strict bool // a SHOULD: a warn, which fails the run under --strict
	// start, when set, serves the build instead of the reference defect.
	start func(t testing.TB) *apispec.Target
	tweak func(*apispec.Profile)
}

// violatedBy adds builds for cases no matrix row catches.
var violatedBy = map[string]violation{
	"missing/repeat-fails-again": {defect: "missing-key-passthrough"},
	"scope/case-sensitive":       {strict: true, start: foldingReference},
}

// noViolatingBuild says, for each other case, why this package has no
// build that breaks it alone (and where one is checked, if anywhere).
var noViolatingBuild = map[string]string{
	"concurrent/retry-after":             "a MAY: unmet is a finding, never a failure",
	"errors/auth-not-stored":             "no reference defect stores a 401; errors/* rows of TestDefectMatrix cover the stored-error defects",
	"errors/validation-not-stored":       "no reference defect stores a 400 validation error",
	"expiry/counted-from":                "an INFO finding (TTL from the first request or from completion), never judged",
	"lease/crash-recovers":               "needs a managed target killed mid-flight: cmd/idemcheck TestLeaseCrashRecovers (lease-never-expires)",
	"lease/slow-outlives-lease":          "needs a slow variant outliving the declared lease; the reference's is shorter",
	"lost/dropped-response-retry":        "the fault proxy's case: cases_lost_test.go",
	"lost/retry-storm":                   "the fault proxy's case: cases_lost_test.go",
	"lost/truncated-request":             "the fault proxy's case: cases_lost_test.go",
	"method/get-ignores-key":             "needs a GET operation: cases_method_test.go",
	"method/patch-honours-key":           "needs a PATCH operation: cases_method_test.go",
	"mismatch/problem-link":              "a SHOULD on the error's shape; no reference defect drops the link",
	"missing/optional-executes":          "runs only under key_required false; examples/variants optional-key",
	"missing/problem-link":               "a SHOULD on the 400's shape; no reference defect drops the link",
	"outbox/lost-answer-retry":           "needs an events source: TestDefectMatrix's events rows (event-on-replay)",
	"outbox/none-for-mismatch":           "needs an events source; no reference defect publishes for a mismatch",
	"outbox/none-for-rejected":           "needs an events source; no reference defect publishes for a rejection",
	"outbox/none-for-replay":             "needs an events source: TestDefectMatrix's events rows (event-on-replay)",
	"outbox/one-per-execution":           "needs an events source: TestOutboxDefectsCaught",
	"outbox/same-key-burst":              "needs an events source: TestDefectMatrix's events rows",
	"outbox/lease-takeover":              "needs PostgreSQL and events: TestOutboxDefectsCaught (event-outside-tx)",
	"outbox/none-for-failed":             "needs an events source; TestDefectMatrix's events rows",
	"problem/docs-link":                  "a SHOULD on the error's shape; no reference defect drops the link",
	"problem/no-store-stable-codes":      "a SHOULD on the error's shape",
	"problem/problem-json":               "a SHOULD on the error's media type",
	"replay/canonical-json":              "a finding under ietf (canonical_json unspecified)",
	"replay/marker-header":               "a finding under ietf (no replay marker defined)",
	"replay/single-execution":            "no reference defect re-executes a sequential retry alone (early-expiry waits TTL/10): examples/variants null-* rows catch it",
	"replay/volatile-fields":             "runs only with volatile_fields declared",
	"replicas/burst-across":              "needs two replicas: cmd/idemcheck TestReplicaFamily (process-local-lock)",
	"replicas/in-flight-other-replica":   "needs two replicas: cmd/idemcheck TestReplicaFamily",
	"replicas/mismatch-other-replica":    "needs two replicas: cmd/idemcheck TestReplicaFamily",
	"replicas/other-user-other-replica":  "needs two replicas: cmd/idemcheck TestReplicaFamily",
	"replicas/replay-other-replica":      "needs two replicas: cmd/idemcheck TestReplicaFamily",
	"replicas/ttl-other-replica":         "needs two replicas: cmd/idemcheck TestReplicaFamily",
	"scope/other-method":                 "an INFO finding, needs two methods on one path",
	"security/hostile-keys":              "no reference defect mishandles hostile keys (5xx)",
	"security/low-entropy-keys":          "an INFO finding on the keys the server issues",
	"security/unauthenticated-known-key": "no reference defect answers an unauthenticated key",
	"syntax/cross-form":                  "no reference defect ignores the key field's form",
	"syntax/first-sent-expired":          "gRPC only: TestGRPCDefects (first-sent-ignored)",
	"syntax/first-sent-future":           "gRPC only: TestGRPCDefects (first-sent-ignored)",
	"syntax/key-accepted":                "no reference defect refuses a valid key",
	"syntax/repeated-header":             "no reference defect reads a repeated key field",
	"lost/client-hangup":                 "the fault proxy's case: cases_lost_test.go TestLostFamily (cancelled-result-write)",
	"outbox/announces-created-id":        "needs an events source with resource_id: TestOutboxDefectsCaught (stale-id-after-expiry), examples/shop",
	"outbox/client-hangup-retry":         "needs an events source and the fault proxy: examples/shop TestEventsOutbox (publish-on-replay)",
	"outbox/fresh-id-after-expiry":       "needs an events source with resource_id: TestOutboxDefectsCaught (stale-id-after-expiry)",
	"outbox/none-for-declined":           "needs an events source: TestOutboxDefectsCaught (event-for-decline)",
	"update/after-other-key":             "needs an update operation (the reference's PATCH on a charge made by setup:): TestUpdateDefects (update-replays-current-state)",
}

// foldingReference is the reference behind a layer that lower-cases
// every key: keys differing in case share one record.
func foldingReference(t testing.TB) *apispec.Target {
	t.Helper()
	app, err := demo.New(demo.Options{TTL: demoTTL, Lease: demoLease})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(keyQuirks{next: app, mode: "fold"})
	t.Cleanup(func() { srv.Close(); app.Close() })
	tg, err := apispec.FromURL(srv.URL, demoTTL, demoLease)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// catalogViolations is, for every case of the catalog, a build that
// breaks it: the first defectMatrix row that pins it (in-process rows
// only), else violatedBy's.
func catalogViolations() map[string]violation {
	out := map[string]violation{}
	for _, row := range defectMatrix {
		if row.pending != "" || row.clean || row.events {
			continue
		}
		v := violation{defect: row.defect, strict: row.strict}
		if row.blockForbidden || row.noCache5xx {
			block, cache := row.blockForbidden, row.noCache5xx
			v.tweak = func(p *apispec.Profile) {
				if block {
					p.BlockOK = false
				}
				if cache {
					p.Cache5xx = apispec.No
				}
			}
		}
		for _, id := range append(slices.Clone(row.want), row.anyOf...) {
			if _, ok := out[id]; !ok {
				out[id] = v
			}
		}
	}
	for id, v := range violatedBy {
		out[id] = v
	}
	return out
}

// TestViolationNeverExitFive: for every case of the catalog, run alone
// against a build that breaks it, the run fails (exit 1): the evidence of
// the violation is never "not enough evidence" (exit 5). A case with no
// such build here names why (noViolatingBuild). A missed overlap is
// tried again on a fresh server, up to twice: no evidence was made then.
func TestViolationNeverExitFive(t *testing.T) {
	builds := catalogViolations()
	var ids []string
	for _, c := range scenarios.Catalog() {
		_, built := builds[c.ID]
		why, excused := noViolatingBuild[c.ID]
		switch {
		case built && excused:
			t.Errorf("%s has a violating build and an excuse (%s): drop the excuse", c.ID, why)
		case !built && !excused:
			t.Errorf("%s: no build violates it and no reason why: add one to violatedBy or noViolatingBuild", c.ID)
		case built:
			ids = append(ids, c.ID)
		}
	}
	reps := make([]*scenarios.Report, len(ids))
	errs := make([]error, len(ids))
	run := func(i int) {
		v := builds[ids[i]]
		var tg *apispec.Target
		if v.start != nil {
			tg = v.start(t)
		} else {
			tg = startDemo(t, v.defect)
		}
		p := lightBurst(referenceProfile(t), v.defect)
		if v.tweak != nil {
			v.tweak(p)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		reps[i], errs[i] = scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{ids[i] + "@charges"}, Strict: v.strict})
	}
	concurrently(len(ids), matrixParallel, run)
	for try := 0; try < 2; try++ {
		var again []int
		for i := range ids {
			if errs[i] == nil && reps[i].Judge().Outcome == scenarios.OutcomeIncomplete && missedOnly(reps[i]) {
				again = append(again, i)
			}
		}
		concurrently(len(again), matrixParallel, func(j int) { run(again[j]) })
	}
	for i, id := range ids {
		t.Run(strings.ReplaceAll(id, "/", "_"), func(t *testing.T) {
			if errs[i] != nil {
				t.Fatalf("Run: %v", errs[i])
			}
			j := reps[i].Judge()
			if j.Outcome == scenarios.OutcomeFail {
				return
			}
			v := builds[id]
			t.Errorf("%s against %s: outcome %s (exit %d), want a failure (exit 1)", id, v.defect, j.Outcome, j.Outcome.ExitCode())
			for _, r := range reps[i].Results {
				t.Logf("%s: %s expected %q observed %q %s", r.Name(), r.Status, r.Expected, r.Observed, r.Reason)
			}
		})
	}
}

// missedOnly reports whether every undecided result of rep missed its
// timing (an overlap a stall prevented), rather than lacking evidence.
func missedOnly(rep *scenarios.Report) bool {
	for _, r := range rep.Results {
		if (r.Status == scenarios.Inconclusive || r.Status == scenarios.Unverifiable) && len(r.Missed) == 0 {
			return false
		}
	}
	return true
}

package reports

import (
	"testing"

	"github.com/idemcheck/idemcheck/scenarios"
)

// TestSkipGroups: skips sharing a reason are one line naming every case,
// the config entries that would run them, and (when only some operations
// skipped) the instances.
func TestSkipGroups(t *testing.T) {
	res := func(id, op string, st scenarios.Status, reason string, missing ...scenarios.Need) scenarios.Result {
		return scenarios.Result{Meta: scenarios.Meta{ID: id, Family: "f", Level: scenarios.Should}, Operation: op,
			Status: st, Reason: reason, Missing: missing}
	}
	const slow = "config does not supply: slow"
	rep := &scenarios.Report{Profile: "ietf", Results: []scenarios.Result{
		res("f/a", "charges", scenarios.Skip, slow, scenarios.NeedSlow),
		res("f/a", "refunds", scenarios.Skip, slow, scenarios.NeedSlow),
		res("f/b", "charges", scenarios.Skip, slow, scenarios.NeedSlow),
		res("f/b", "refunds", scenarios.Pass, ""),
		res("f/c", "charges", scenarios.Skip, "profile leaves x unspecified"),
		res("f/d", "charges", scenarios.Fail, "", ""),
	}}
	rep.Results[5].KnownFailing = true // an expected failure is not a skip
	got := skipGroups(rep)
	if len(got) != 2 {
		t.Fatalf("rule: one group per reason; got %+v", got)
	}
	if want := "skip   2 cases: config does not supply: slow (config: operations[].variants.slow) — f/a, f/b@charges"; got[0].line() != want {
		t.Errorf("rule: the biggest group first, naming its config entry and a partly skipped case's instance\ngot  %s\nwant %s", got[0].line(), want)
	}
	if want := "skip   1 case: profile leaves x unspecified — f/c"; got[1].line() != want {
		t.Errorf("rule: a reason without a config entry names none\ngot  %s\nwant %s", got[1].line(), want)
	}
}

// TestObservation: a result's one-line finding adds expected vs observed
// to its reason unless the reason already quotes the observation.
func TestObservation(t *testing.T) {
	for _, tc := range []struct {
		rule string
		r    scenarios.Result
		want string
	}{
		{"reason and observation", scenarios.Result{Reason: "replayed the old response", Expected: "422", Observed: "201 replay"}, "replayed the old response (expected 422, observed 201 replay)"},
		{"observation only", scenarios.Result{Expected: "422", Observed: "201"}, "expected 422, observed 201"},
		{"reason quoting it", scenarios.Result{Reason: "answered 201 replay", Observed: "201 replay"}, "answered 201 replay"},
		{"reason only", scenarios.Result{Reason: "no overlap\nthis time"}, "no overlap this time"},
	} {
		if got := observation(tc.r); got != tc.want {
			t.Errorf("rule: %s: got %q, want %q", tc.rule, got, tc.want)
		}
	}
}

// TestNextLevelText: at draft-07 core the conformance line says in one
// sentence what stands between the run and full, by what would test it.
func TestNextLevelText(t *testing.T) {
	res := func(id string, level scenarios.Level, req string, st scenarios.Status, reason string, missing ...scenarios.Need) scenarios.Result {
		return scenarios.Result{Meta: scenarios.Meta{ID: id, Family: "f", Level: level, Requirements: []string{req}}, Operation: "charges",
			Status: st, Reason: reason, Missing: missing}
	}
	rep := &scenarios.Report{Profile: "ietf", Results: []scenarios.Result{
		res("f/must", scenarios.Must, "IK-M-1", scenarios.Pass, ""),
		res("f/verified", scenarios.Should, "IK-S-1", scenarios.Pass, ""),
		res("f/verified-elsewhere", scenarios.Should, "IK-S-1", scenarios.Skip, "config does not supply: replicas", scenarios.NeedReplicas),
		res("f/slow", scenarios.Should, "IK-S-2", scenarios.Skip, "config does not supply: slow", scenarios.NeedSlow),
		res("f/finding", scenarios.Should, "IK-S-3", scenarios.Skip, "profile leaves cache_5xx unspecified; finding recorded"),
		res("f/published", scenarios.Should, "IK-S-4", scenarios.Skip, "profile key_max_len is not published (0)"),
		res("f/uncounted", scenarios.Should, "IK-S-5", scenarios.Unverifiable, "cannot be counted"),
		res("f/warned", scenarios.Should, "IK-S-6", scenarios.Warn, ""),
		res("f/patch", scenarios.Should, "IK-S-7", scenarios.Skip, "needs a PATCH operation"),
		res("f/optional", scenarios.Should, "IK-S-8", scenarios.Skip, scenarios.NotApplicable+" where the key is required"),
	}}
	c := rep.Conformance()
	if c.Level != scenarios.LevelCore {
		t.Fatalf("level %q, want core", c.Level)
	}
	want := "draft-07 full needs 6 more SHOULD requirements verified: the config lacks operations[].variants.slow; " +
		"the profile leaves open cache_5xx, key_max_len; no evidence for IK-S-5 (f/uncounted unverifiable); " +
		"the API does not meet IK-S-6 (f/warned@charges warn); other cases say why: IK-S-7 (f/patch: needs a PATCH operation)"
	if got := nextLevelText(rep, c); got != want {
		t.Errorf("rule: one sentence by what would test each unverified SHOULD (a verified one, and one that does not apply, are left out)\ngot  %s\nwant %s", got, want)
	}
	if got := conformanceText(rep, c); got != "draft-07 core (1/1 MUST, 1/7 SHOULD verified); "+want {
		t.Errorf("rule: the conformance line is the level, its counts and the sentence: %s", got)
	}
}

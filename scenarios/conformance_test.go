package scenarios

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// TestConformance: the level a run reaches, one row per rule; levels are
// decided by requirement, from the same verdicts as the outcome.
func TestConformance(t *testing.T) {
	res := func(id string, level Level, req string, s Status) Result {
		return Result{Meta: Meta{ID: id, Level: level, Requirements: []string{req}}, Operation: "charges", Status: s, Reason: "why"}
	}
	core := []Result{res("a/must", Must, "IK-A", Pass), res("a/should", Should, "IK-B", Pass), res("a/info", Info, "IK-C", Warn)}
	with := func(rs ...Result) []Result { return append(append([]Result{}, core...), rs...) }
	known := res("a/known", Should, "IK-K", Fail)
	known.KnownFailing = true
	skipped := res("b/must", Must, "IK-S", Skip)
	skipped.Missing = []Need{NeedReplicas}
	outboxSkipped := res("outbox/one-per-execution", Must, "IK-OUTBOX-1", Skip)
	outboxSkipped.Missing = []Need{NeedEvents}
	notAEP := res("syntax/first-sent-expired", Must, "IK-FIRSTSENT-1", Skip)
	notAEP.Missing = []Need{NeedFirstSent, NeedTTL}
	aepNoTTL := res("syntax/first-sent-expired", Must, "IK-FIRSTSENT-1", Skip)
	aepNoTTL.Missing = []Need{NeedTTL}
	notApplicable := res("missing/repeat-fails-again", Must, "IK-MISSING-3", Skip)
	notApplicable.Reason = NotApplicable + " where the key is optional: profile key_required is false"
	profileOpen := res("missing/repeat-fails-again", Must, "IK-MISSING-3", Skip)
	profileOpen.Reason = "profile key_required is not true"
	cases := []struct {
		name, rule string
		rep        Report
		level      string
		contains   string // in Blocker or Why
	}{
		{"full", "every MUST and SHOULD verified under ietf: full (INFO never counts)", Report{Profile: "ietf", Results: core}, LevelFull, ""},
		{"core", "a SHOULD not tested blocks full and is named", Report{Profile: "ietf", Results: with(res("b/should", Should, "IK-D", Skip))}, LevelCore, "IK-D (SHOULD) not tested: b/should@charges"},
		{"core warn", "a SHOULD that warns blocks full", Report{Profile: "ietf", Results: with(res("b/should", Should, "IK-D", Warn))}, LevelCore, "IK-D (SHOULD) violated"},
		{"vendor", "a vendor profile reaches '<profile> compatible'", Report{Profile: "stripe", Results: core}, "stripe compatible", ""},
		{"must fail", "a violated MUST: not conformant, naming it", Report{Profile: "ietf", Results: with(res("b/must", Must, "IK-E", Fail))}, LevelNotConformant, "IK-E (MUST) violated: b/must@charges: fail"},
		{"must warn", "a MUST that warns is violated (the outcome rule)", Report{Profile: "ietf", Results: with(res("b/must", Must, "IK-E", Warn))}, LevelNotConformant, "IK-E (MUST) violated"},
		{"violation beats interruption", "a violation seen before an interruption stands", Report{Profile: "ietf", Interrupted: true, Results: with(res("b/must", Must, "IK-E", Fail))}, LevelNotConformant, "IK-E"},
		{"untested must", "a MUST not tested claims no level, naming what it needs", Report{Profile: "ietf", Results: with(skipped)}, LevelNone, "IK-S (MUST) not tested: b/must@charges: needs replicas"},
		{"must tested elsewhere", "a MUST instance skipped while its requirement is verified by another instance does not block", Report{Profile: "ietf", Results: with(res("b/must", Must, "IK-A", Skip))}, LevelFull, ""},
		{"must unverifiable", "a MUST without evidence claims no level", Report{Profile: "ietf", Results: with(res("b/must", Must, "IK-E", Unverifiable))}, LevelNone, "without evidence"},
		{"allow incomplete", "--allow-incomplete claims no level", Report{Profile: "ietf", AllowIncomplete: true, Results: core}, LevelNone, "--allow-incomplete"},
		{"known failing", "known-failing entries claim no level", Report{Profile: "ietf", Results: with(known)}, LevelNone, "known-failing"},
		{"interrupted", "an interrupted run claims no level", Report{Profile: "ietf", Interrupted: true, Results: core}, LevelNone, "interrupted"},
		{"left out", "globs that leave out a MUST claim no level", Report{Profile: "ietf", LeftOut: []string{"concurrent/same-key-burst@charges"}, Results: core}, LevelNone, "left out 1 MUST instances (first concurrent/same-key-burst@charges)"},
		{"no profile", "a report without a profile claims no draft level", Report{Results: core}, LevelNone, "no profile"},
		{"outbox not configured", "a MUST whose instances all need events: (the outbox, not the draft's) does not hold a level back", Report{Profile: "ietf", Results: with(outboxSkipped)}, LevelFull, ""},
		{"outbox violated", "with events: configured the outbox MUST is held like any other", Report{Profile: "ietf", Results: with(res("outbox/none-for-replay", Must, "IK-OUTBOX-1", Fail))}, LevelNotConformant, "IK-OUTBOX-1 (MUST) violated"},
		{"first_sent without an AEP-155 key", "AEP-155's first_sent MUST does not hold back a target whose key has none", Report{Profile: "ietf", Results: with(notAEP)}, LevelFull, ""},
		{"first_sent untested", "an AEP-155 key is held to its first_sent MUST: untested for want of a ttl, no level", Report{Profile: "aep-155", Results: with(aepNoTTL)}, LevelNone, "IK-FIRSTSENT-1 (MUST) not tested: syntax/first-sent-expired@charges: needs ttl"},
		{"first_sent violated", "an AEP-155 first_sent accepted fails the MUST", Report{Profile: "aep-155", Results: with(res("syntax/first-sent-future", Must, "IK-FIRSTSENT-1", Fail))}, LevelNotConformant, "IK-FIRSTSENT-1 (MUST) violated"},
		{"not applicable", "a MUST that does not apply under the profile (a second keyless rejection where the key is optional) is no part of the catalog", Report{Profile: "aep-155", Results: with(notApplicable)}, "aep-155 compatible", ""},
		{"profile leaves it open", "a MUST the profile leaves open (key_required unknown) is not tested: no level", Report{Profile: "lenient", Results: with(profileOpen)}, LevelNone, "IK-MISSING-3 (MUST) not tested"},
		{"empty", "a run without MUSTs claims nothing", Report{Profile: "ietf", Results: []Result{res("a/should", Should, "IK-B", Pass)}}, LevelNone, "no MUST"},
	}
	for _, c := range cases {
		got := c.rep.Conformance()
		if got.Level != c.level || !strings.Contains(got.Blocker+" | "+got.Why, c.contains) {
			t.Errorf("%s: rule: %s: got %+v, want level %q mentioning %q", c.name, c.rule, got, c.level, c.contains)
		}
		if c.level == LevelFull && got.Blocker != "" {
			t.Errorf("%s: the top level has no blocker, got %q", c.name, got.Blocker)
		}
	}
	if got := (&Report{Profile: "ietf", Results: with(res("b/should", Should, "IK-D", Skip))}).Conformance(); got.Must != (Tested{1, 1}) || got.Should != (Tested{1, 2}) {
		t.Errorf("counts per requirement: got MUST %+v SHOULD %+v, want 1/1 and 1/2", got.Must, got.Should)
	}
}

// TestUntestedMust: each untested MUST requirement once, with the config
// line that would test it; instances left out by globs after them.
func TestUntestedMust(t *testing.T) {
	a := Result{Meta: Meta{ID: "scope/other-user-isolated", Level: Must, Requirements: []string{"IK-SCOPE-1"}}, Operation: "charges", Status: Skip,
		Missing: []Need{NeedSecondPrincipal}}
	b := a
	b.Operation = "refunds"
	ttl := Result{Meta: Meta{ID: "expiry/x", Level: Must, Requirements: []string{"IK-EXPIRY-9"}}, Status: Skip, Reason: "needs ttl ≥ 2.5s"}
	done := Result{Meta: Meta{ID: "replay/single-execution", Level: Must, Requirements: []string{"IK-REPLAY-3"}}, Status: Pass}
	across := Result{Meta: Meta{ID: "replicas/other-user-other-replica", Level: Must, Requirements: []string{"IK-SCOPE-1"}}, Operation: "charges", Status: Skip,
		Missing: []Need{NeedReplicas, NeedSecondPrincipal}}
	outbox := Result{Meta: Meta{ID: "outbox/one-per-execution", Level: Must, Requirements: []string{"IK-OUTBOX-1"}}, Status: Skip, Missing: []Need{NeedEvents}}
	firstSent := Result{Meta: Meta{ID: "syntax/first-sent-future", Level: Must, Requirements: []string{"IK-FIRSTSENT-1"}}, Status: Skip, Missing: []Need{NeedFirstSent}}
	// outbox, first_sent: not the draft's, so not untested without
	// events: or an AEP-155 key (optIn)
	rep := &Report{Results: []Result{across, a, b, ttl, outbox, firstSent, done}, LeftOut: []string{"concurrent/same-key-burst@charges"}}
	got := rep.UntestedMust()
	if len(got) != 3 {
		t.Fatalf("want IK-SCOPE-1 once, IK-EXPIRY-9 and the left-out instance, got %+v", got)
	}
	if got[0].Requirement != "IK-SCOPE-1" || got[0].Instance != "scope/other-user-isolated@charges" ||
		got[0].Reason != "needs second-principal" || !strings.HasPrefix(got[0].Hint, "principals:") {
		t.Errorf("a missing config entry names the line that supplies it, from the instance lacking the fewest: %+v", got[0])
	}
	if got[1].Reason != "needs ttl ≥ 2.5s" || got[1].Hint != "" {
		t.Errorf("a case's own reason is kept when no config entry is missing: %+v", got[1])
	}
	if got[2].Instance != "concurrent/same-key-burst@charges" || got[2].Reason != "left out by --run/--skip" {
		t.Errorf("a left-out MUST is untested: %+v", got[2])
	}
	// The client face selects with --run alone: its words name no --skip.
	cl := &Report{Client: true, LeftOut: []string{"key/unique-parallel"}}
	if u := cl.UntestedMust(); len(u) != 1 || u[0].Reason != "left out by --run" {
		t.Errorf("a client run's left-out MUST names --run alone: %+v", u)
	}
	for _, n := range []Need{NeedOracle, NeedEffects, NeedIDPointer, NeedSecondPrincipal, NeedSecondOperation, NeedSlow, NeedBusinessError,
		NeedTransientError, NeedInvalid, NeedTTL, NeedLease, NeedTargetCmd, NeedReplicas, NeedEvents, NeedFirstSent} {
		if h := n.ConfigHint(); h == string(n) || !strings.Contains(h, ":") {
			t.Errorf("need %s has no config line: %q", n, h)
		}
	}
}

// TestRedactedConfig: literal secret header values become <redacted>,
// ${NAME} stays, and redacting twice changes nothing (a third party
// holding the redacted file gets the same digest).
func TestRedactedConfig(t *testing.T) {
	raw := []byte("base_url: http://127.0.0.1:1\nsecret_headers: [authorization]\nprincipals:\n" +
		"  - {name: a, headers: {Authorization: Bearer s3cret-token}}\n  - {name: b, headers: {Authorization: 'Bearer ${B_TOKEN}', X-Trace: plain}}\n")
	once, err := apispec.RedactedConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := string(once)
	if strings.Contains(s, "s3cret") || !strings.Contains(s, "Authorization: <redacted>") || !strings.Contains(s, "${B_TOKEN}") || !strings.Contains(s, "X-Trace: plain") {
		t.Errorf("want the literal secret redacted, the placeholder and other headers kept:\n%s", s)
	}
	twice, err := apispec.RedactedConfig(once)
	if err != nil || string(twice) != s {
		t.Errorf("redacting the redacted file changed it (err %v):\n%s", err, twice)
	}
	if _, err := apispec.RedactedConfig([]byte("principals: [")); err == nil {
		t.Error("a YAML error is reported")
	}
}

// TestLeftOutOptIn: the MUST instances --run leaves out are the config's
// catalog: an opt-in requirement (the outbox without events:, first_sent
// without an AEP-155 key) it does not ask for is not among them.
func TestLeftOutOptIn(t *testing.T) {
	tg, err := apispec.FromURL("http://127.0.0.1:1", 3*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := apispec.ProfileByName(apispec.DefaultProfile)
	o := RunOptions{Run: []string{"replay/*"}}
	ins, err := plan(tg, p, o)
	if err != nil {
		t.Fatal(err)
	}
	left := leftOutMust(tg, p, o, ins)
	if len(left) == 0 {
		t.Fatal("rule: --run replay/* leaves out the other MUSTs; got none")
	}
	for _, name := range left {
		if strings.HasPrefix(name, "outbox/") || strings.HasPrefix(name, "syntax/first-sent-") {
			t.Errorf("rule: an opt-in requirement the config does not ask for is not left out: %s", name)
		}
	}
}

// TestLeftOutNotApplicable: over gRPC, a MUST instance that does not apply
// (replay/key-field-spelling: a field has one name) is not left out by
// --run; one that applies (replay/single-execution) is.
func TestLeftOutNotApplicable(t *testing.T) {
	tg, p, err := apispec.ParseConfig([]byte(`base_url: grpc://127.0.0.1:1
key: {field: request_id}
principals: [{name: a}]
operations: [{name: pay, rpc: acme.v1.Payments/Create, body: {amount: 1}, id_pointer: /name}]
profile: {preset: aip-155}
`))
	if err != nil {
		t.Fatal(err)
	}
	o := RunOptions{Run: []string{"outbox/*"}}
	ins, err := plan(tg, p, o)
	if err != nil {
		t.Fatal(err)
	}
	left := leftOutMust(tg, p, o, ins)
	if !slices.Contains(left, "replay/single-execution@pay") {
		t.Errorf("rule: --run leaves out the MUSTs that apply; got %v", left)
	}
	if slices.Contains(left, "replay/key-field-spelling@pay") {
		t.Errorf("rule: a MUST that does not apply to gRPC is not left out: %v", left)
	}
}

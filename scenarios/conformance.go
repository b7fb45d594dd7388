package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
)

// Conformance levels a run can reach (Report.Conformance). A vendor
// profile's level is "<profile> compatible" (ProfileLevel).
const (
	// LevelFull: every MUST and every SHOULD requirement verified under
	// the ietf profile.
	LevelFull = "draft-07 full"
	// LevelCore: every MUST requirement verified (none violated, none
	// without evidence, none untested) under the ietf profile.
	LevelCore = "draft-07 core"
	// LevelClient: a client run (Report.Client) with every MUST of the
	// client catalog verified under the ietf profile.
	LevelClient = "draft-07 client"
	// LevelNotConformant: a MUST requirement is violated.
	LevelNotConformant = "not conformant"
	// LevelNone: nothing violated, but the run cannot support a claim
	// (a MUST untested or without evidence, --allow-incomplete, known-
	// failing entries, an interruption, globs that left a MUST out).
	LevelNone = "no level"
)

// ProfileLevel is the level a run under a profile other than ietf reaches
// when every MUST is verified: "<profile> compatible".
func ProfileLevel(profile string) string { return profile + " compatible" }

// Tested counts the requirements of one level: how many the run verified
// out of how many it cites.
type Tested struct {
	Verified int `json:"verified"`
	Total    int `json:"total"`
}

// Conformance is the level a run reached, decided from its verdicts by
// the same rule as its outcome (Effective): a MUST that warns is violated.
type Conformance struct {
	Level string `json:"level"`
	// Blocker names the first requirement that blocks the next level, with
	// the instance that shows it; empty at the top level.
	Blocker string `json:"blocker,omitempty"`
	// Why says in one line why no level is claimed (LevelNone) or the run
	// is not conformant.
	Why    string `json:"why,omitempty"`
	Must   Tested `json:"must"`
	Should Tested `json:"should"`
}

// Conformance decides the run's level. In order: a violated MUST makes it
// not conformant (whatever else held the run back: the evidence stands);
// an interruption, --allow-incomplete, known-failing entries, globs that
// left out a MUST, a MUST without evidence or untested claim no level;
// otherwise the ietf profile reaches draft-07 core, and full when every
// SHOULD is verified too, and any other profile "<profile> compatible".
func (r *Report) Conformance() Conformance {
	states := r.requirementStates()
	var c Conformance
	states = slices.DeleteFunc(states, requirementState.optIn)
	for _, st := range states {
		t := map[Level]*Tested{Must: &c.Must, Should: &c.Should}[st.Level]
		if t == nil {
			continue // MAY and INFO cases never decide a level
		}
		t.Total++
		if st.State == reqVerified {
			t.Verified++
		}
	}
	first := func(level Level, state int) *requirementState {
		for i := range states {
			if states[i].Level == level && states[i].State == state {
				return &states[i]
			}
		}
		return nil
	}
	none := func(blocker, why string) Conformance {
		c.Level, c.Blocker, c.Why = LevelNone, blocker, why
		return c
	}
	if st := first(Must, reqViolated); st != nil {
		c.Level, c.Blocker = LevelNotConformant, st.describe()
		c.Why = "MUST " + st.ID + " is violated"
		return c
	}
	known := 0
	for _, res := range r.Results {
		if res.KnownFailing {
			known++
		}
	}
	switch {
	case r.Interrupted:
		return none("", "the run was interrupted: a partial run claims no level")
	case r.AllowIncomplete:
		return none("", "--allow-incomplete: a run that accepts MUSTs without evidence claims no level")
	case known > 0:
		return none("", fmt.Sprintf("%d instances on the known-failing list: a run with known failures claims no level", known))
	case len(r.LeftOut) > 0:
		return none("", fmt.Sprintf("%s left out %d MUST instances (first %s): a run that leaves out a MUST claims no level", r.selectors(), len(r.LeftOut), r.LeftOut[0]))
	}
	if st := first(Must, reqNoEvidence); st != nil {
		return none(st.describe(), "MUST "+st.ID+" has no evidence: a claim needs every MUST verified")
	}
	if st := first(Must, reqNotTested); st != nil {
		st.By = r.closestToTested(*st)
		return none(st.describe(), "MUST "+st.ID+" was not tested: a claim needs every MUST verified")
	}
	switch {
	case c.Must.Total == 0:
		return none("", "no MUST requirement was run")
	case r.Profile == "":
		return none("", "the report names no profile")
	case r.Profile != apispec.DefaultProfile:
		c.Level = ProfileLevel(r.Profile)
		if r.Client {
			c.Level += " client"
		}
		return c
	case r.Client:
		// The client catalog's SHOULDs do not make a second level: a
		// client is conformant or not.
		c.Level = LevelClient
		if st := first(Should, reqViolated); st != nil {
			c.Blocker = st.describe()
		}
		return c
	}
	c.Level = LevelCore
	for _, state := range []int{reqViolated, reqNoEvidence, reqNotTested} {
		if st := first(Should, state); st != nil {
			c.Blocker = st.describe()
			return c
		}
	}
	c.Level = LevelFull
	return c
}

// describe is "IK-SCOPE-1 (MUST) not tested: scope/other-user-isolated@charges: needs second-principal".
func (st requirementState) describe() string {
	state := map[int]string{reqNotTested: "not tested", reqVerified: "verified", reqNoEvidence: "without evidence", reqViolated: "violated"}[st.State]
	s := fmt.Sprintf("%s (%s) %s: %s", st.ID, st.Level, state, st.By.Name())
	switch {
	case st.State == reqViolated:
		s += ": " + string(st.By.Status)
	case len(st.By.Missing) > 0:
		s += ": needs " + joinNeeds(st.By.Missing)
	case st.By.Reason != "":
		s += ": " + st.By.Reason
	}
	return s
}

// Untested is a MUST requirement the run did not test, with the instance
// that would have and the config line that would let it.
type Untested struct {
	Requirement string `json:"requirement"`
	Instance    string `json:"instance"`
	// Reason: why it did not run ("needs replicas", "left out by
	// --run/--skip", or the case's own reason).
	Reason string `json:"reason"`
	// Hint is the one config line that would test it (empty when the
	// reason is not a missing config entry).
	Hint string `json:"hint,omitempty"`
}

// UntestedMust lists the MUST requirements no instance tested, one entry
// each (the first skipped instance citing it), then the MUST instances
// the --run/--skip globs left out. --require-must makes any of them exit 5.
func (r *Report) UntestedMust() []Untested {
	var out []Untested
	for _, st := range r.requirementStates() {
		if st.Level != Must || st.State != reqNotTested || st.optIn() {
			continue
		}
		by := r.closestToTested(st)
		u := Untested{Requirement: st.ID, Instance: by.Name(), Reason: by.Reason}
		if len(by.Missing) > 0 {
			u.Reason = "needs " + joinNeeds(by.Missing)
			hints := make([]string, len(by.Missing))
			for i, n := range by.Missing {
				hints[i] = n.ConfigHintFor(r.Protocol)
			}
			u.Hint = strings.Join(hints, "; ")
		}
		out = append(out, u)
	}
	for _, name := range r.LeftOut {
		out = append(out, Untested{Instance: name, Reason: "left out by " + r.selectors()})
	}
	return out
}

// selectors names the flags that choose a run's cases: the client face
// has --run alone.
func (r *Report) selectors() string {
	if r.Client {
		return "--run"
	}
	return "--run/--skip"
}

// closestToTested is the skipped instance citing an untested requirement
// that lacks the fewest config entries (IK-SCOPE-1 needs a second
// principal, not replicas as well): the one line that would test it.
// Instances skipped for another reason (the profile, a short TTL) come
// after those a config entry would enable.
func (r *Report) closestToTested(st requirementState) Result {
	best, bestN := st.By, -1
	for _, res := range r.Results {
		if res.Level != st.Level || !slices.Contains(res.Requirements, st.ID) {
			continue
		}
		n := len(res.Missing)
		if n == 0 {
			n = 1 << 10
		}
		if bestN < 0 || n < bestN {
			best, bestN = res, n
		}
	}
	return best
}

func joinNeeds(ns []Need) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// ConfigHint is the config entry that supplies the need, as one YAML line
// (docs/conformance.md describes each field).
func (n Need) ConfigHint() string {
	switch n {
	case NeedOracle:
		return "oracle: {url: /effects?key={key}, pointer: /executions}"
	case NeedEffects:
		return "oracle: {url: /effects?key={key}, pointer: /executions} (or the operation's id_pointer: /id)"
	case NeedIDPointer:
		return "operations[].id_pointer: /id"
	case NeedSecondPrincipal:
		return "principals: a second entry, e.g. {name: bob, headers: {Authorization: Bearer ${BOB_TOKEN}}}"
	case NeedSecondOperation:
		return "operations: a second key-accepting operation"
	case NeedSlow:
		return "operations[].variants.slow: {patch: {delay_ms: 1500}, duration: 1500ms} (a body that keeps the handler busy)"
	case NeedBusinessError:
		return "operations[].variants.business_error: {patch: {fail: decline}, status: 402}"
	case NeedTransientError:
		return "operations[].variants.transient_error: {patch: {fail: transient}, status: 503}"
	case NeedInvalid:
		return "operations[].variants.invalid: {patch: {amount: not-a-number}, status: 400}"
	case NeedLarge:
		return "operations[].variants.large: {patch: {pad_bytes: 1048576}} (a body whose 2xx is at least 1 MiB)"
	case NeedBinary:
		return "operations[].variants.binary: {patch: {format: binary}} (a body whose 2xx is not JSON)"
	case NeedCrash:
		return "operations[].variants.crash: {patch: {fail: crash}, status: 500} (a body that makes the handler crash)"
	case NeedTimeout:
		return "operations[].variants.timeout: {patch: {fail: timeout}, status: 504} (a body that makes the handler time out)"
	case NeedTTL:
		return "ttl: 24h (the retention the API publishes, or never)"
	case NeedLease:
		return "lease: 30s (the in-flight lease the API publishes)"
	case NeedTargetCmd:
		return "target_cmd: ./server --port {port} (or --target-cmd)"
	case NeedReplicas:
		return "replicas: [http://replica-a:8080, http://replica-b:8080] (or --replica URL, repeated)"
	case NeedFirstSent:
		return "key: {field: idempotency_key, first_sent: true} (an AEP-155 gRPC target)"
	case NeedEvents:
		return "events: {kafka: {brokers: [127.0.0.1:9092], topic: orders.events}, key: {header: idempotency-key}} (docs/events.md)"
	}
	return string(n)
}

package scenarios

import (
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/wire"
)

// Level is the strength of the requirement a case checks.
type Level string

const (
	Must   Level = "MUST"
	Should Level = "SHOULD"
	May    Level = "MAY"
	Info   Level = "INFO" // informational: reported, never fails a run
)

// Status is a case verdict.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	// Warn: a SHOULD is unmet; Fail under --strict. A MUST-level case that
	// warns fails the run (Report.Effective).
	Warn Status = "warn"
	// Skip: the config does not supply what the case needs, or the profile
	// says the behaviour is not applicable.
	Skip Status = "skip"
	// Unverifiable: the case needs an effects oracle the target lacks.
	Unverifiable Status = "unverifiable"
	// Inconclusive: the needed condition (e.g. an overlap) could not be
	// created, so nothing can be concluded.
	Inconclusive Status = "inconclusive"
	// Interrupted: the run was interrupted (SIGINT/SIGTERM, the caller's
	// deadline) before the case finished; what it had seen is not judged.
	Interrupted Status = "interrupted"
)

// Need is something a case requires from the target's configuration.
type Need string

const (
	NeedOracle          Need = "oracle"
	NeedIDPointer       Need = "id-pointer"
	NeedSecondPrincipal Need = "second-principal"
	NeedSecondOperation Need = "second-operation"
	NeedSlow            Need = "slow"
	NeedBusinessError   Need = "business-error"
	NeedTransientError  Need = "transient-error"
	NeedInvalid         Need = "invalid"
	NeedTTL             Need = "ttl"
	NeedLease           Need = "lease"
	NeedLarge           Need = "large"
	NeedBinary          Need = "binary"
	NeedCrash           Need = "crash"
	NeedTimeout         Need = "timeout"
)

// Meta describes a case: what it checks and why.
type Meta struct {
	ID           string   `json:"id"`     // stable slug "family/name", never a position
	Family       string   `json:"family"` // "replay", "mismatch", ...
	Requirements []string `json:"requirements"`
	Level        Level    `json:"level"`
	// Requirement is the spec sentence (or vendor rule) the case tests.
	Requirement string `json:"requirement"`
	// Explanation is one sentence saying the rule in plain words.
	Explanation string `json:"explanation"`
	Needs       []Need `json:"needs,omitempty"`
}

// Result is the outcome of one case applied to one operation.
type Result struct {
	Meta
	Operation string          `json:"operation,omitempty"`
	Status    Status          `json:"status"`
	Expected  string          `json:"expected,omitempty"`
	Observed  string          `json:"observed,omitempty"`
	Reason    string          `json:"reason,omitempty"` // why skip/unverifiable/inconclusive, or the failure in one line
	Exchanges []wire.Exchange `json:"exchanges,omitempty"`
	// Downstream lists, per key, the downstream double's calls that held
	// the key's token: one line each, timed from the key's first request.
	Downstream []string `json:"downstream,omitempty"`
	// Events lists, per key, the events the API published for it (the
	// events: source): position, time from the key's first request, id.
	Events   []string      `json:"events,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// KnownFailing: listed in the known-failing file; a Fail is then
	// expected and a Pass fails the run (the list cannot go stale).
	KnownFailing bool `json:"known_failing,omitempty"`
	// Missing lists what the config lacks for a skipped or unverifiable
	// case (Needs it does not supply).
	Missing []Need `json:"missing,omitempty"`
	// Attempts is how many times the case ran when an earlier attempt
	// missed its timing (RunOptions.Attempts; 0: once), and Missed why
	// each earlier attempt was inconclusive. Their exchanges are labelled
	// "attempt N: ".
	Attempts int      `json:"attempts,omitempty"`
	Missed   []string `json:"missed,omitempty"`

	oracleAsked bool // the case asked the oracle (tests check it declared so)
}

// Name is the result's unique name: "family/case@operation".
func (r Result) Name() string {
	if r.Operation == "" {
		return r.ID
	}
	return r.ID + "@" + r.Operation
}

// Report is one conformance run.
type Report struct {
	Target  string `json:"target"`
	Profile string `json:"profile"`
	// Protocol is the HTTP version the target answered the run in
	// (HTTP/1.1, HTTP/2).
	Protocol string `json:"protocol,omitempty"`
	Strict   bool   `json:"strict"`
	// AllowIncomplete lets a run pass although a MUST-level instance ended
	// unverifiable or inconclusive (--allow-incomplete).
	AllowIncomplete bool `json:"allow_incomplete"`
	// RequireMust makes a MUST not tested hold the run back like one
	// without evidence (--require-must: exit 5).
	RequireMust bool `json:"require_must"`
	// Interrupted: the run was stopped before every instance finished.
	Interrupted bool          `json:"interrupted"`
	Seed        uint64        `json:"seed"`
	Started     time.Time     `json:"started"`
	Duration    time.Duration `json:"duration_ns"`
	Results     []Result      `json:"results"`
	// Notes are run-wide remarks printed before the results, e.g. the
	// oracle check's finding that a 2xx execution left the count unchanged.
	Notes []string `json:"notes,omitempty"`
	// LeftOut names the MUST-level instances the --run/--skip globs left
	// out: a run that leaves out a MUST claims no conformance level.
	LeftOut []string `json:"left_out,omitempty"`
	// TTLSkipped counts the instances skipped for a declared TTL too short
	// (Case.MinTTL); NeedsTTL is the least TTL that runs them all.
	TTLSkipped int           `json:"ttl_skipped,omitempty"`
	NeedsTTL   time.Duration `json:"needs_ttl_ns,omitempty"`
	// Command is the command line that ran (secrets as ${NAME}) and Config
	// the config it read, with its digest: what a replay repeats and an
	// attestation cites. Set by the front end.
	Command string    `json:"command,omitempty"`
	Config  *Resource `json:"config,omitempty"`
	// Client: the run certified an API client (idemcheck client, the
	// client catalog), not a server; its level is LevelClient.
	Client bool `json:"client,omitempty"`
}

// Resource names a file a run read, by path and SHA-256 digest.
type Resource struct {
	Path string `json:"path"`
	// SHA256 is the hex digest of the content as cited (a config with its
	// secrets redacted, see RedactedConfig).
	SHA256 string `json:"sha256"`
}

// Effective is a result's verdict once the run's rules are applied.
type Effective struct {
	Status Status
	// Expected: a failure the known-failing list announced.
	Expected bool
	// Incomplete: a MUST-level instance without evidence (unverifiable or
	// inconclusive); the run cannot pass unless AllowIncomplete.
	Incomplete bool
	// Note says why the status differs from the case's own, or why it
	// holds the run back.
	Note string
}

// Effective applies the run-level rules to one result: a MUST-level
// warning is a failure (a MUST unmet, however the case phrased it: it can
// never let a run pass); under Strict a SHOULD warning fails; a
// known-failing case that fails is an expected failure;
// a known-failing case that passes fails the run, so the list cannot go
// stale; a MUST without evidence is incomplete unless AllowIncomplete.
// Report.Judge and every report writer read verdicts through it.
func (r *Report) Effective(res Result) Effective {
	switch {
	case res.KnownFailing && (res.Status == Fail || res.Status == Warn):
		return Effective{Status: Fail, Expected: true, Note: "failed as expected (known-failing list)"}
	case res.KnownFailing && res.Status == Pass:
		return Effective{Status: Fail, Note: "listed as known-failing but passed: remove it from the list"}
	case res.Status == Warn && res.Level == Must:
		return Effective{Status: Fail, Note: "a MUST-level warning is a failure: the requirement is not met"}
	case res.Status == Warn && r.Strict && res.Level != Info:
		return Effective{Status: Fail, Note: "SHOULD unmet; --strict makes it a failure"}
	case res.Level == Must && (res.Status == Unverifiable || res.Status == Inconclusive) && !r.AllowIncomplete:
		return Effective{Status: res.Status, Incomplete: true,
			Note: "MUST without evidence: the run cannot pass (exit 5) unless --allow-incomplete"}
	}
	return Effective{Status: res.Status}
}

// RunOutcome is a run's overall verdict.
type RunOutcome string

// Run outcomes, from worst: an interruption, a failure, a MUST without
// evidence, a pass.
const (
	OutcomePass        RunOutcome = "pass"
	OutcomeFail        RunOutcome = "fail"
	OutcomeIncomplete  RunOutcome = "incomplete"
	OutcomeInterrupted RunOutcome = "interrupted"
)

// ExitCode is the CLI's documented exit code for the outcome: 0 pass,
// 1 fail, 5 not enough evidence, 130 interrupted.
func (o RunOutcome) ExitCode() int {
	switch o {
	case OutcomeFail:
		return 1
	case OutcomeIncomplete:
		return 5
	case OutcomeInterrupted:
		return 130
	}
	return 0
}

// Judgment is a run's outcome with the results behind it.
type Judgment struct {
	Outcome RunOutcome
	// Problems are the results that fail the run, one line each.
	Problems []string
	// WithoutEvidence are the MUST-level instances that ended unverifiable
	// or inconclusive (empty under AllowIncomplete), one line each.
	WithoutEvidence []string
	// Untested are the MUSTs not tested under RequireMust, one line each.
	Untested []string
}

// Judge decides the run: interrupted beats a failure, which beats a MUST
// without evidence (or, under RequireMust, not tested), which beats a pass. A skip never holds a run back: it
// says the config does not describe what the case needs or the profile
// leaves the behaviour open, and the requirement counts show it as not
// tested.
func (r *Report) Judge() Judgment {
	var j Judgment
	for _, res := range r.Results {
		v := r.Effective(res)
		switch {
		case v.Status == Fail && !v.Expected:
			why := string(res.Status)
			if res.KnownFailing {
				why = v.Note
			}
			j.Problems = append(j.Problems, res.Name()+": "+why)
		case v.Incomplete:
			j.WithoutEvidence = append(j.WithoutEvidence, res.Name()+": "+string(res.Status)+": "+res.Reason)
		}
	}
	if r.RequireMust {
		for _, u := range r.UntestedMust() {
			line := u.Instance + ": " + u.Reason
			if u.Requirement != "" {
				line = u.Requirement + " " + line
			}
			j.Untested = append(j.Untested, line)
		}
	}
	switch {
	case r.Interrupted:
		j.Outcome = OutcomeInterrupted
	case len(j.Problems) > 0:
		j.Outcome = OutcomeFail
	case len(j.WithoutEvidence) > 0 || len(j.Untested) > 0:
		j.Outcome = OutcomeIncomplete
	default:
		j.Outcome = OutcomePass
	}
	return j
}

// Outcome says whether the run passes (Judge's outcome is pass) and, if
// not, the results that hold it back.
func (r *Report) Outcome() (ok bool, problems []string) {
	j := r.Judge()
	return j.Outcome == OutcomePass, slices.Concat(j.Problems, j.WithoutEvidence, j.Untested)
}

// RequirementCounts tally the requirements of one level by what the run
// established about each.
type RequirementCounts struct {
	// Verified: every instance that ran passed.
	Verified int `json:"verified"`
	// Violated: some instance failed or warned (an expected failure of
	// the known-failing list included: the server still breaks it).
	Violated int `json:"violated"`
	// WithoutEvidence: nothing violated, but some instance was
	// unverifiable, inconclusive or interrupted.
	WithoutEvidence int `json:"without_evidence"`
	// NotTested: every instance skipped (config lacks what it needs, or
	// the profile leaves the behaviour open).
	NotTested int `json:"not_tested"`
	// OptIn: not tested, and held only where the config asks for it (the
	// outbox rule without events:, AEP-155's first_sent without its key):
	// counted apart, as no part of the run's level.
	OptIn int `json:"opt_in,omitempty"`
}

// NotApplicable begins the skip reason of an instance whose requirement
// does not exist for the target as its profile and carrier describe it
// (IK-MISSING-3's second rejection where the profile says the key is
// optional, Retry-After over gRPC): it counts for no requirement, so it
// neither holds a level back nor appears among the MUSTs not tested.
const NotApplicable = "does not apply"

// DoesNotApply reports an instance skipped as NotApplicable.
func DoesNotApply(res Result) bool {
	return res.Status == Skip && strings.HasPrefix(res.Reason, NotApplicable)
}

// Requirement states, from best: what the run established about one
// requirement, by the worst of its instances.
const (
	reqNotTested = iota
	reqVerified
	reqNoEvidence
	reqViolated
)

// requirementState is one requirement at one level: its state and the
// first instance (in report order) that set it.
type requirementState struct {
	Level Level
	ID    string
	State int
	By    Result
}

// requirementStates lists each requirement ID a case cites (the case ID
// when it cites none) once per level, in first-cited order, with the
// worst of its instances: violated, then without evidence, then verified,
// then not tested. Requirements, Conformance and UntestedMust read it.
func (r *Report) requirementStates() []requirementState {
	var out []requirementState
	idx := map[[2]string]int{}
	for _, res := range r.Results {
		if DoesNotApply(res) {
			continue // no part of this target's catalog: neither tested nor untested
		}
		s := reqNotTested
		switch res.Status {
		case Pass:
			s = reqVerified
		case Unverifiable, Inconclusive, Interrupted:
			s = reqNoEvidence
		case Fail, Warn:
			s = reqViolated
		}
		ids := res.Requirements
		if len(ids) == 0 {
			ids = []string{res.ID}
		}
		for _, id := range ids {
			k := [2]string{string(res.Level), id}
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, requirementState{Level: res.Level, ID: id, State: s, By: res})
			}
			if s > out[i].State {
				out[i].State, out[i].By = s, res
			}
		}
	}
	return out
}

// Requirements counts requirements, not instances: each requirement ID a
// case cites (the case ID when it cites none) is counted once per level,
// by the worst of its instances: violated, then without evidence, then
// verified, then not tested.
func (r *Report) Requirements() map[Level]RequirementCounts {
	out := map[Level]RequirementCounts{}
	for _, st := range r.requirementStates() {
		c := out[st.Level]
		switch st.State {
		case reqVerified:
			c.Verified++
		case reqNoEvidence:
			c.WithoutEvidence++
		case reqViolated:
			c.Violated++
		default:
			if st.optIn() {
				c.OptIn++
			} else {
				c.NotTested++
			}
		}
		out[st.Level] = c
	}
	return out
}

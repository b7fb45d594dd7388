package scenarios

import (
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
)

// Gap is a MUST requirement a config cannot verify, with the one-line fix.
type Gap struct {
	Case         string   `json:"case"` // case@operation
	Requirements []string `json:"requirements"`
	Fix          string   `json:"fix"`
}

// needFixes says how a config supplies each need.
var needFixes = map[Need]string{
	NeedOracle:          "add oracle: (sql:, a list or counter url), downstream: or events: to count executions (docs/evidence.md)",
	NeedEffects:         "add oracle: (sql:, a list or counter url), downstream:, events: or id_pointer: to count executions (docs/evidence.md)",
	NeedEvents:          "add events: the broker the API publishes its events to (docs/events.md)",
	NeedFirstSent:       "an AEP-155 key: key: {field: idempotency_key, first_sent: true}",
	NeedIDPointer:       "add id_pointer: the created resource's id in the 2xx body",
	NeedSecondPrincipal: "add a second principal (principals:)",
	NeedSecondOperation: "add a second operation",
	NeedSlow:            "add a slow variant (variants.slow: a body or a downstream delay that keeps the request in flight)",
	NeedBusinessError:   "add a business_error variant (a body or a downstream answer that makes the API fail with a 4xx)",
	NeedTransientError:  "add a transient_error variant (a body or a downstream answer that makes the API fail with a 5xx)",
	NeedInvalid:         "add an invalid variant (a body the API rejects as invalid)",
	NeedTTL:             "add ttl: the declared retention (or ttl: never)",
	NeedLease:           "add lease: the declared in-flight lease",
	NeedTargetCmd:       "add target_cmd: a command that starts the API (the harness kills and restarts it)",
	NeedReplicas:        "add replicas: two or more base URLs of one API",
}

// errorAnswerCases are the cases whose verdict rests on whether a request
// that answered an error executed: created ids alone make them
// unverifiable (Env.blindTo decides it as they run).
var errorAnswerCases = map[string]bool{
	"mismatch/original-survives": true,
	"mismatch/changed-body":      true,
	"mismatch/added-field":       true,
	"missing/rejected":           true,
}

// optInNeeds make a family opt-in: an API without an outbox (events:) or
// without replicas does not break their rules, it has none to keep.
var optInNeeds = []Need{NeedEvents, NeedReplicas}

// Gaps lists the MUST instances of planned that the config cannot verify:
// one lacks what it needs, or counts executions by created ids alone where
// an execution that answered an error decides the verdict. An instance
// that needs an AEP-155 key is no gap of a target without one: its
// requirement is the AEP's, not this API's. Those of the opt-in families
// (events, replicas) are notAsked, apart: the config did not ask for them.
// The fixes are written for the target's carrier (code names, message
// fields, metadata for gRPC).
func Gaps(planned []Planned, carrier string) (gaps, notAsked []Gap) {
	for _, p := range planned {
		if p.Level != Must || slices.Contains(p.Missing, NeedFirstSent) {
			continue
		}
		var fixes []string
		for _, n := range p.Missing {
			if f := needFix(n, carrier); f != "" {
				fixes = append(fixes, f)
			} else {
				fixes = append(fixes, "supply "+string(n))
			}
		}
		if p.Supplied && p.OracleMode == OracleIdentity && errorAnswerCases[p.ID] {
			fixes = append(fixes, "created ids cannot see an execution that answered an error: "+needFix(NeedOracle, carrier))
		}
		switch g := (Gap{Case: p.Name(), Requirements: p.Requirements, Fix: strings.Join(fixes, "; ")}); {
		case len(fixes) == 0:
		case slices.ContainsFunc(p.Missing, func(n Need) bool { return slices.Contains(optInNeeds, n) }):
			notAsked = append(notAsked, g)
		default:
			gaps = append(gaps, g)
		}
	}
	return gaps, notAsked
}

// EvidenceLine says what t's config counts executions with: its oracles,
// per key or global (a serial run), else created ids and what they cannot
// see, else nothing.
func EvidenceLine(t *apispec.Target) string {
	os := t.Oracles()
	if len(os) > 0 {
		names := make([]string, len(os))
		for i, o := range os {
			names[i] = o.String()
		}
		how := "per key"
		if !os[0].PerKey() {
			how = "a global count: the run is serial"
		}
		line := "evidence: " + strings.Join(names, "; ") + " (" + how + ")"
		if t.Events != nil {
			line += "; events on " + t.Events.String() + " beside it (the outbox/ cases)"
		}
		return t.Redact(line)
	}
	if t.Events != nil {
		return t.Redact("evidence: events on " + t.Events.String() + " (per key: each key's published events, once settled)")
	}
	for _, op := range t.Operations {
		if hasMarks(&op) {
			return "evidence: created ids only (id_pointer): they cannot see an execution that answered an error, nor one whose response was lost (docs/evidence.md)"
		}
	}
	return "evidence: none: effect-counting cases are unverifiable (docs/evidence.md)"
}

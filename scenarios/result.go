package scenarios

import (
	"net/http"
	"time"
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
	// Warn: a SHOULD is unmet; Fail under --strict.
	Warn Status = "warn"
	// Skip: the config does not supply what the case needs, or the profile
	// says the behaviour is not applicable.
	Skip Status = "skip"
	// Unverifiable: the case needs an effects oracle the target lacks.
	Unverifiable Status = "unverifiable"
	// Inconclusive: the needed condition (e.g. an overlap) could not be
	// created, so nothing can be concluded.
	Inconclusive Status = "inconclusive"
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
	Operation string        `json:"operation,omitempty"`
	Status    Status        `json:"status"`
	Expected  string        `json:"expected,omitempty"`
	Observed  string        `json:"observed,omitempty"`
	Reason    string        `json:"reason,omitempty"` // why skip/unverifiable/inconclusive, or the failure in one line
	Exchanges []Exchange    `json:"exchanges,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
	// KnownFailing: listed in the known-failing file; a Fail is then
	// expected and a Pass fails the run (the list cannot go stale).
	KnownFailing bool `json:"known_failing,omitempty"`

	oracleAsked bool // the case asked the oracle (tests check it declared so)
}

// Name is the result's unique name: "family/case@operation".
func (r Result) Name() string {
	if r.Operation == "" {
		return r.ID
	}
	return r.ID + "@" + r.Operation
}

// Exchange is one HTTP request and what came back, kept as evidence.
type Exchange struct {
	Label    string            `json:"label,omitempty"`
	Request  ExchangeRequest   `json:"request"`
	Response *ExchangeResponse `json:"response,omitempty"`
	Error    string            `json:"error,omitempty"`
	Start    time.Time         `json:"start"`
	Duration time.Duration     `json:"duration_ns"`
}

// ExchangeRequest is the request half of an Exchange.
type ExchangeRequest struct {
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// ExchangeResponse is the response half of an Exchange.
type ExchangeResponse struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// Report is one conformance run.
type Report struct {
	Target   string        `json:"target"`
	Profile  string        `json:"profile"`
	Strict   bool          `json:"strict"`
	Seed     int64         `json:"seed"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Results  []Result      `json:"results"`
	// Notes are run-wide remarks printed before the results, e.g. the
	// oracle check's finding that a 2xx execution left the count unchanged.
	Notes []string `json:"notes,omitempty"`
}

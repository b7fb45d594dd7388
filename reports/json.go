package reports

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck/scenarios"
)

// SchemaV1 names the JSON report format documented in docs/conformance.md.
// Fields may be added within v1; renaming or removing one makes v2.
const SchemaV1 = "idemcheck.report/v1"

type jsonReport struct {
	Schema          string    `json:"schema"`
	Target          string    `json:"target"`
	Profile         string    `json:"profile"`
	Protocol        string    `json:"protocol,omitempty"` // HTTP/1.1, HTTP/2
	Strict          bool      `json:"strict"`
	AllowIncomplete bool      `json:"allow_incomplete"`
	RequireMust     bool      `json:"require_must"`
	Interrupted     bool      `json:"interrupted"`
	Seed            uint64    `json:"seed"`
	Started         time.Time `json:"started"`
	DurationMS      float64   `json:"duration_ms"`
	// Outcome is "pass" | "fail" | "incomplete" (a MUST without evidence)
	// | "interrupted"; ExitCode is the CLI's for it (0, 1, 5, 130).
	Outcome  scenarios.RunOutcome `json:"outcome"`
	ExitCode int                  `json:"exit_code"`
	Counts   Counts               `json:"counts"`
	// Requirements counts requirement IDs per level (MUST, SHOULD, ...).
	Requirements map[scenarios.Level]scenarios.RequirementCounts `json:"requirements"`
	// WithoutEvidence names the MUST instances behind an "incomplete".
	WithoutEvidence []string `json:"without_evidence"`
	// Conformance is the level reached (docs/certify.md); UntestedMust the
	// MUSTs no instance tested, with the config line for each; LeftOut the
	// MUST instances the --run/--skip globs left out.
	Conformance  scenarios.Conformance `json:"conformance"`
	UntestedMust []scenarios.Untested  `json:"untested_must"`
	LeftOut      []string              `json:"left_out,omitempty"`
	// Command is the command line that ran (secrets as ${NAME}); Config the
	// config file it read, with the SHA-256 of its redacted content.
	Command string              `json:"command,omitempty"`
	Config  *scenarios.Resource `json:"config,omitempty"`
	// Client: a client run (idemcheck client), judged by the client catalog.
	Client  bool         `json:"client,omitempty"`
	Notes   []string     `json:"notes,omitempty"` // e.g. the oracle check's finding
	Results []jsonResult `json:"results"`
}

type jsonResult struct {
	Name         string           `json:"name"`
	ID           string           `json:"id"`
	Family       string           `json:"family"`
	Operation    string           `json:"operation"`
	Level        scenarios.Level  `json:"level"`
	Requirements []string         `json:"requirements"`
	Requirement  string           `json:"requirement"`
	Explanation  string           `json:"explanation"`
	Needs        []scenarios.Need `json:"needs"`
	Missing      []scenarios.Need `json:"missing,omitempty"`
	Status       scenarios.Status `json:"status"`
	Verdict      scenarios.Status `json:"verdict"`
	Expected     string           `json:"expected"`
	Observed     string           `json:"observed"`
	Reason       string           `json:"reason"`
	Note         string           `json:"note,omitempty"`
	Incomplete   bool             `json:"incomplete,omitempty"` // a MUST without evidence
	KnownFailing bool             `json:"known_failing"`
	DurationMS   float64          `json:"duration_ms"`
	Exchanges    []jsonExchange   `json:"exchanges"`
	Downstream   []string         `json:"downstream,omitempty"` // the double's calls per key
	Events       []string         `json:"events,omitempty"`     // the events published per key (events:)
	Attempts     int              `json:"attempts,omitempty"`   // tries when earlier ones missed their timing
	Missed       []string         `json:"missed,omitempty"`     // why each earlier try was inconclusive
}

type jsonExchange struct {
	Label      string       `json:"label"`
	Request    jsonMessage  `json:"request"`
	Response   *jsonMessage `json:"response"`
	Error      string       `json:"error,omitempty"`
	Start      time.Time    `json:"start"`
	DurationMS float64      `json:"duration_ms"`
	Curl       string       `json:"curl"`
}

type jsonMessage struct {
	Method     string      `json:"method,omitempty"`
	URL        string      `json:"url,omitempty"`
	Status     int         `json:"status,omitempty"`
	Header     http.Header `json:"header"`
	Body       *string     `json:"body,omitempty"`
	BodyBase64 *string     `json:"body_base64,omitempty"`
}

// JSON writes the report in the idemcheck.report/v1 schema.
func JSON(w io.Writer, rep *scenarios.Report) error {
	j := rep.Judge()
	out := jsonReport{
		Schema:          SchemaV1,
		Target:          rep.Target,
		Profile:         rep.Profile,
		Protocol:        rep.Protocol,
		Strict:          rep.Strict,
		AllowIncomplete: rep.AllowIncomplete,
		RequireMust:     rep.RequireMust,
		Interrupted:     rep.Interrupted,
		Seed:            rep.Seed,
		Started:         rep.Started.UTC(),
		DurationMS:      ms(rep.Duration),
		Outcome:         j.Outcome,
		ExitCode:        j.Outcome.ExitCode(),
		Counts:          Tally(rep),
		Requirements:    rep.Requirements(),
		WithoutEvidence: []string{},
		Conformance:     rep.Conformance(),
		UntestedMust:    nonNil(rep.UntestedMust()),
		LeftOut:         rep.LeftOut,
		Command:         rep.Command,
		Config:          rep.Config,
		Client:          rep.Client,
		Notes:           rep.Notes,
		Results:         []jsonResult{},
	}
	for _, r := range WithoutEvidence(rep) {
		out.WithoutEvidence = append(out.WithoutEvidence, r.Name())
	}
	for _, r := range rep.Results {
		v := Effective(rep, r)
		jr := jsonResult{
			Name: r.Name(), ID: r.ID, Family: r.Family, Operation: r.Operation,
			Level: r.Level, Requirements: nonNil(r.Requirements), Requirement: r.Requirement,
			Explanation: r.Explanation, Needs: nonNil(r.Needs), Missing: r.Missing, Status: r.Status, Verdict: v.Status,
			Expected: r.Expected, Observed: r.Observed, Reason: r.Reason, Note: v.Note, Incomplete: v.Incomplete,
			KnownFailing: r.KnownFailing, DurationMS: ms(r.Duration), Exchanges: []jsonExchange{},
			Downstream: r.Downstream, Events: r.Events, Attempts: r.Attempts, Missed: r.Missed,
		}
		for _, ex := range r.Exchanges {
			je := jsonExchange{
				Label:      ex.Label,
				Request:    jsonMessage{Method: ex.Request.Method, URL: ex.Request.URL, Header: nonNilHeader(ex.Request.Header)},
				Error:      ex.Error,
				Start:      ex.Start.UTC(),
				DurationMS: ms(ex.Duration),
				Curl:       ex.Curl(),
			}
			je.Request.Body, je.Request.BodyBase64 = jsonBody(ex.Request.Body)
			if ex.Response != nil {
				resp := jsonMessage{Status: ex.Response.Status, Header: nonNilHeader(ex.Response.Header)}
				resp.Body, resp.BodyBase64 = jsonBody(ex.Response.Body)
				je.Response = &resp
			}
			jr.Exchanges = append(jr.Exchanges, je)
		}
		out.Results = append(out.Results, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// ReadJSON reads a report written by JSON back: the run's settings and
// every result's verdict, requirements and reason (not the exchanges), so
// that its level and outcome can be decided again by the same rule
// (idemcheck verify, --expect, --replay-of). A report of another schema
// is an error.
func ReadJSON(r io.Reader) (*scenarios.Report, error) {
	var in jsonReport
	if err := json.NewDecoder(r).Decode(&in); err != nil {
		return nil, fmt.Errorf("not a JSON report: %v", err)
	}
	if in.Schema != SchemaV1 {
		return nil, fmt.Errorf("schema %q, want %q", in.Schema, SchemaV1)
	}
	rep := &scenarios.Report{
		Target: in.Target, Profile: in.Profile, Protocol: in.Protocol, Strict: in.Strict, AllowIncomplete: in.AllowIncomplete, RequireMust: in.RequireMust,
		Interrupted: in.Interrupted, Seed: in.Seed, Started: in.Started, Duration: time.Duration(in.DurationMS * float64(time.Millisecond)),
		Notes: in.Notes, LeftOut: in.LeftOut, Command: in.Command, Config: in.Config, Client: in.Client,
	}
	for _, jr := range in.Results {
		rep.Results = append(rep.Results, scenarios.Result{
			Meta: scenarios.Meta{ID: jr.ID, Family: jr.Family, Requirements: jr.Requirements, Level: jr.Level,
				Requirement: jr.Requirement, Explanation: jr.Explanation, Needs: jr.Needs},
			Operation: jr.Operation, Status: jr.Status, Expected: jr.Expected, Observed: jr.Observed, Reason: jr.Reason,
			KnownFailing: jr.KnownFailing, Missing: jr.Missing, Duration: time.Duration(jr.DurationMS * float64(time.Millisecond)),
			Attempts: jr.Attempts, Missed: jr.Missed,
		})
	}
	return rep, nil
}

// jsonBody keeps a UTF-8 body as text and anything else as base64.
func jsonBody(b []byte) (text, b64 *string) {
	if len(b) == 0 {
		return nil, nil
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return nil, &s
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nonNilHeader(h http.Header) http.Header {
	if h == nil {
		return http.Header{}
	}
	return h
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

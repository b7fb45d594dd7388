package chaos

import (
	"slices"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/internal/grpccode"
)

// The checker's lines name answers as the target's protocol does: HTTP
// statuses, or over gRPC the codes (their names), with the HTTP status
// google.rpc.Code maps each to where the rule compared that status
// ("ABORTED (409)"). The rules themselves classify by the status. These
// words stay with the checker, which writes them into each finding's
// Detail; reports/chaosreport, which renders the findings, names an
// answer with the same StatusText.

// ClientCode is the gRPC code of the answer the client got to ev ("":
// an HTTP attempt, or none). A history written before events carried it
// has the upstream's code when the client got the upstream's answer.
func (ev *Event) ClientCode() string {
	if ev.GRPCCode != "" {
		return ev.GRPCCode
	}
	if ev.Client == ClientOK && ev.Fault == "" && len(ev.Upstream) > 0 && ev.Upstream[0].Status == ev.Status {
		return ev.Upstream[0].GRPCCode
	}
	return ""
}

// addCode records that the client got code with status.
func addCode(m map[int][]string, status int, code string) map[int][]string {
	if m == nil {
		m = map[int][]string{}
	}
	if !slices.Contains(m[status], code) {
		m[status] = append(m[status], code)
	}
	return m
}

// answer is an answer's status for a line: "status 409", or over gRPC
// "ABORTED (409)" (the status alone when the code is unknown).
func answer(status int, code string) string {
	if code == "" {
		return "status " + strconv.Itoa(status)
	}
	return StatusText(status, code)
}

// StatusText is "409", or over gRPC "ABORTED (409)": how the checker's
// lines and the report name an answer.
func StatusText(status int, code string) string {
	if code == "" {
		return strconv.Itoa(status)
	}
	return code + " (" + strconv.Itoa(status) + ")"
}

// opAnswer is the client's final answer: over gRPC the codes the client
// got with that status ("ABORTED or ALREADY_EXISTS (409)" when the key's
// answers with it had both: the op records the status only), else the
// codes that map to it.
func (s *keyState) opAnswer(op *Op) string {
	codes := s.clientCodes[op.Status]
	if len(codes) == 0 && s.grpc && op.Status != 0 {
		// An answer the proxy made up without recording its code (a
		// dropped call's UNAVAILABLE): the codes its status stands for.
		codes = grpccode.Names(op.Status)
	}
	return answer(op.Status, strings.Join(codes, " or "))
}

// vocabulary is what a key's lines call its answers and requests.
type vocabulary struct {
	ok      string // a success
	reqs    string // the requests
	err5xx  string // answers that map to 5xx
	errBody string // what an error answer's digest covers
	errs    string // several of them
	anErr   string // one replayed
	outage  string // a store outage's answer
}

var httpWords = vocabulary{ok: "2xx", reqs: "bodies", err5xx: "5xx", errBody: "body", errs: "bodies", anErr: "a 5xx", outage: "503"}

// words is the vocabulary of s's protocol; over gRPC the 5xx answers are
// named by the codes the upstream answered ("UNAVAILABLE").
func (s *keyState) words() vocabulary {
	if !s.grpc {
		return httpWords
	}
	var codes []string
	for i, c := range s.codes {
		if s.statuses[i] >= 500 && !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	err5xx := strings.Join(codes, "/")
	if err5xx == "" {
		err5xx = "5xx-coded" // the first 32 answers named none
	}
	return vocabulary{ok: "OK", reqs: "messages", err5xx: err5xx, errBody: "status (code, message, details)", errs: "statuses", anErr: "the error", outage: "UNAVAILABLE"}
}

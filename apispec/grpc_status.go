package apispec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/internal/grpccode"
)

// A status a config names by its gRPC code (mismatch_status:
// INVALID_ARGUMENT, a variant's status: FAILED_PRECONDITION) is held as
// GRPCStatus(code), past every HTTP status, so that a gRPC answer is
// judged by its exact code (its Grpc-Status), not by the HTTP status
// google.rpc.Code maps it to: FAILED_PRECONDITION is not INVALID_ARGUMENT
// though both map to 400. A status given as a number stands for the HTTP
// status, whatever code a gRPC answer maps to it. An HTTP target holds
// the mapped HTTP statuses instead (Profile.HTTPStatuses): its answers
// have no code.
const grpcStatusBase = 1000

// GRPCStatus is how a status named by gRPC code c is held.
func GRPCStatus(c int) int { return grpcStatusBase + c }

// StatusCode is the gRPC code s names, ok false for an HTTP status.
func StatusCode(s int) (code int, ok bool) {
	if s >= grpcStatusBase && s < grpcStatusBase+grpccode.Count {
		return s - grpcStatusBase, true
	}
	return 0, false
}

// HTTPStatusOf is the HTTP status s stands for: s itself, or the one
// google.rpc.Code maps its code to.
func HTTPStatusOf(s int) int {
	if c, ok := StatusCode(s); ok {
		return GRPCHTTPStatus(c)
	}
	return s
}

// StatusName is s as a config writes it: 409, or ABORTED.
func StatusName(s int) string {
	if c, ok := StatusCode(s); ok {
		return GRPCCodeName(c)
	}
	return strconv.Itoa(s)
}

// Status is a status in a config: an HTTP status, or a gRPC code name
// (INVALID_ARGUMENT), held as GRPCStatus(code).
type Status int

// UnmarshalYAML accepts 409 or ABORTED.
func (s *Status) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: cannot unmarshal a %s: want a status (409) or a gRPC code name (ABORTED)", n.Line, strings.TrimPrefix(n.ShortTag(), "!!"))
	}
	if v, err := strconv.Atoi(n.Value); err == nil {
		if v >= grpcStatusBase {
			return fmt.Errorf("line %d: %d is not an HTTP status: want a status (409) or a gRPC code name (ABORTED)", n.Line, v)
		}
		*s = Status(v)
		return nil
	}
	c, ok := grpccode.ByName(strings.ToUpper(n.Value))
	if !ok {
		return fmt.Errorf("line %d: cannot unmarshal `%s`: want a status (409) or a gRPC code name (OK, INVALID_ARGUMENT, ABORTED, ...)", n.Line, n.Value)
	}
	*s = Status(GRPCStatus(c))
	return nil
}

// Statuses is a profile's list of statuses: HTTP statuses or gRPC code
// names, one or a list.
type Statuses []int

// UnmarshalYAML accepts a status, a code name or a list of them.
func (ss *Statuses) UnmarshalYAML(n *yaml.Node) error {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	out := Statuses{}
	for _, it := range items {
		var s Status
		if err := s.UnmarshalYAML(it); err != nil {
			return err
		}
		out = append(out, int(s))
	}
	*ss = out
	return nil
}

// String is the list as reports print it: [422], [INVALID_ARGUMENT].
func (ss Statuses) String() string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = StatusName(s)
	}
	return "[" + strings.Join(names, " ") + "]"
}

// MarshalJSON writes HTTP statuses as numbers and gRPC codes by name.
func (ss Statuses) MarshalJSON() ([]byte, error) {
	if ss == nil {
		return []byte("null"), nil // as a nil []int
	}
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
		if _, ok := StatusCode(s); ok {
			out[i] = StatusName(s)
		}
	}
	return json.Marshal(out)
}

// HTTPStatuses holds every status named by a gRPC code as the HTTP status
// google.rpc.Code maps it to (each once): a profile judging an HTTP
// target, whose answers have no code (a gRPC preset, a code name in an
// HTTP config).
func (p *Profile) HTTPStatuses() {
	for _, ss := range []*Statuses{&p.MissingStatus, &p.MismatchStatus, &p.InFlightStatus} {
		var out Statuses
		for _, s := range *ss {
			if h := HTTPStatusOf(s); !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
		if len(*ss) > 0 {
			*ss = out
		}
	}
}

// StatusNote is, for a gRPC target, the line saying which statuses its
// profile judges answers by, code names exact ("" for an HTTP target).
func StatusNote(t *Target, p *Profile) string {
	if !t.IsGRPC() {
		return ""
	}
	list := func(ss Statuses) string {
		if len(ss) == 0 {
			return "any error"
		}
		return strings.Trim(ss.String(), "[]")
	}
	return fmt.Sprintf("statuses (profile %s): missing key %s; mismatch %s; in flight %s (a code name is judged by the exact gRPC code, a number by google.rpc.Code's HTTP mapping)",
		p.Name, list(p.MissingStatus), list(p.MismatchStatus), list(p.InFlightStatus))
}

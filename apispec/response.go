package apispec

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// Response is an operation's success answer as the API gives it (the
// response: section): what idemcheck client's stand-in answers a call
// with, a fresh resource id put at the operation's id_pointer on every
// execution. Without it the stand-in echoes the request with the id. The
// server faces judge the API's own answers and ignore it.
type Response struct {
	// Status is an HTTP success status (0: 201 for a POST, else 200); a
	// gRPC answer has none.
	Status int `json:"status,omitempty"`
	// Body is the answer's body: JSON for HTTP, the response message in
	// protojson for gRPC (checked against the protoset by the stand-in).
	Body json.RawMessage `json:"body,omitempty"`
}

// IDPlaceholder, in the string at an operation's id_pointer in its
// response body, is replaced by each execution's fresh id
// ("transfers/{id}"); a value without it is replaced whole.
const IDPlaceholder = "{id}"

// WithID is value, the configured string at id_pointer, with a fresh id.
func WithID(value, id string) string {
	if strings.Contains(value, IDPlaceholder) {
		return strings.ReplaceAll(value, IDPlaceholder, id)
	}
	return id
}

type responseConfig struct {
	Status int `yaml:"status"`
	Body   any `yaml:"body"`
}

// response is c as a Response; at names the operation in errors.
func (c *responseConfig) response(at string) (*Response, error) {
	if c == nil {
		return nil, nil
	}
	b, err := jsonx.Encode(c.Body)
	if err != nil {
		return nil, fmt.Errorf("%s.response.body: %v", at, err)
	}
	return &Response{Status: c.Status, Body: b}, nil
}

// validateResponse checks op's response: a success status, and a body in
// which the fresh id has a place.
func (t *Target) validateResponse(at string, op *Operation) error {
	r := op.Response
	if r == nil {
		return nil
	}
	switch {
	case r.Status == 0 && len(r.Body) == 0:
		return fmt.Errorf("%s.response: give body (and, over HTTP, status): the answer the stand-in of idemcheck client gives", at)
	case t.IsGRPC() && r.Status != 0:
		return fmt.Errorf("%s.response.status %d: a gRPC answer has no HTTP status; give body, the response message in protojson", at, r.Status)
	case r.Status != 0 && (r.Status < 200 || r.Status > 299):
		return fmt.Errorf("%s.response.status %d: want a 2xx success status (the faults are the client catalog's)", at, r.Status)
	case t.IsGRPC() && !jsonx.IsObject(r.Body):
		return fmt.Errorf("%s.response.body: want the response message as a protojson object", at)
	case len(r.Body) > 0 && !jsonx.IsObject(r.Body):
		return fmt.Errorf("%s.response.body: want a JSON object: each execution's fresh id goes in it at id_pointer", at)
	}
	return nil
}

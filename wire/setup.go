package wire

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// SetupValues are the values of a setup's answer that an operation names
// ({setup.id}), by pointer (/id).
type SetupValues map[string]string

// SetupLabel starts the label of every setup exchange in the evidence.
const SetupLabel = "setup"

// SetupExchange is the setup request (apispec.Setup) that makes a fresh
// resource for a request of op by principal: sent under key, its own
// fresh key (over gRPC with a key field, none: the setup's message may
// have no such field).
func SetupExchange(c Carrier, t *apispec.Target, op *apispec.Operation, principal int, key, base string) Exchange {
	s := op.Setup
	if s.Principal != nil {
		principal = *s.Principal
	}
	sop := s.SetupOperation(op.Name + " setup")
	return c.Build(sop, Request{Label: SetupLabel + ": a fresh resource for " + op.Name, Key: key, NoKey: t.KeyField() != "",
		Principal: principal, Base: base})
}

// SetupResult reads the values op names out of r, the answer to its setup
// request; the error is one line naming the setup and what came back.
func SetupResult(t *apispec.Target, op *apispec.Operation, r Resp) (SetupValues, error) {
	s := op.Setup
	at := fmt.Sprintf("%s.setup (%s %s)", op.Name, s.Method, s.Path)
	if !r.OK() {
		what := r.String()
		if r.Err == nil {
			what = "answered " + what
		}
		return nil, fmt.Errorf("%s: %s: no fresh resource to act on", at, t.Redact(what))
	}
	doc, err := jsonx.Decode(r.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: the %d answer is not JSON: %v", at, r.Status, err)
	}
	vals := SetupValues{}
	for _, p := range op.SetupRefs() {
		v, ok := jsonx.Pointer(doc, p)
		text := jsonx.ScalarText(v)
		if !ok || text == "" {
			return nil, fmt.Errorf("%s: nothing at %s in the %d answer (members: %s), which {setup%s} names", at, p, r.Status,
				strings.Join(slices.Sorted(memberNames(doc)), ", "), strings.ReplaceAll(p, "/", "."))
		}
		vals[p] = text
	}
	return vals, nil
}

func memberNames(doc any) func(func(string) bool) {
	return func(yield func(string) bool) {
		m, _ := doc.(map[string]any)
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Bind writes vals where x names them: the URL's path (escaped), the
// header field values and the body (escaped for a JSON string).
func (vals SetupValues) Bind(x *Exchange) {
	if len(vals) == 0 {
		return
	}
	esc := SetupValues{}
	for p, v := range vals {
		esc[p] = url.PathEscape(v)
	}
	x.Request.URL = apispec.BindSetup(x.Request.URL, esc, false)
	for k, vs := range x.Request.Header {
		if !slices.ContainsFunc(vs, func(v string) bool { return strings.Contains(v, "{setup.") }) {
			continue
		}
		bound := make([]string, len(vs)) // the values may be shared with other requests
		for i, v := range vs {
			bound[i] = apispec.BindSetup(v, vals, false)
		}
		x.Request.Header[k] = bound
	}
	if len(x.Request.Body) > 0 {
		x.Request.Body = []byte(apispec.BindSetup(string(x.Request.Body), vals, true))
	}
}

// DoSetup sends op's setup request through c and returns the values it
// binds, with the exchange for the evidence.
func DoSetup(ctx context.Context, c Carrier, t *apispec.Target, op *apispec.Operation, principal int, key, base string) (SetupValues, Exchange, error) {
	r, x := c.Do(ctx, SetupExchange(c, t, op, principal, key, base))
	vals, err := SetupResult(t, op, r)
	return vals, x, err
}

// WithFreshResource, when op has a setup, sends it (under a fresh key of
// its own) and binds its values into x: for the one-off requests of a
// start check, whose setup exchange is not kept.
func WithFreshResource(ctx context.Context, c Carrier, t *apispec.Target, op *apispec.Operation, principal int, base string, x *Exchange) error {
	if op.Setup == nil {
		return nil
	}
	vals, _, err := DoSetup(ctx, c, t, op, principal, uuid.NewString(), base)
	if err != nil {
		return err
	}
	vals.Bind(x)
	return nil
}

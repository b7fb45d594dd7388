package apispec

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// Operation kinds (operations[].kind).
const (
	// KindCreate (the default): each execution creates a resource and
	// answers its own id, so two answers with one id are one execution.
	KindCreate = "create"
	// KindUpdate changes an existing resource (a PATCH, a PUT, a capture
	// of a charge): every answer names the same resource, so its id is no
	// evidence of a replay, a leak or an execution. Executions are counted
	// by the oracle or the version_pointer, replays judged on the body.
	KindUpdate = "update"
)

// Updates reports that op changes an existing resource (kind: update,
// declared or learned by the run's id_pointer check).
func (op *Operation) Updates() bool { return op.Kind == KindUpdate }

// ExecutionMark is the text in r, a 2xx answer body of op, that differs
// between two executions and repeats in a replay: the created id on a
// create; on an update the version member (prefixed with the resource id
// when op has an id pointer, so that two fresh resources at version 1 are
// told apart). "" when op has no such pointer or the body has nothing
// there: the answer is then no evidence either way.
func (op *Operation) ExecutionMark(body []byte) string {
	if !op.Updates() {
		if op.IDPointer == "" {
			return ""
		}
		return jsonx.PointerText(body, op.IDPointer)
	}
	if op.VersionPointer == "" {
		return ""
	}
	v := jsonx.PointerText(body, op.VersionPointer)
	if v == "" || op.IDPointer == "" {
		return v
	}
	return jsonx.PointerText(body, op.IDPointer) + "@" + v
}

// Setup is the request that makes a fresh resource for one key of an
// operation acting on an existing one (a capture, a refund, a cancel, a
// PATCH): sent once per key before the key's first request, never counted.
// The values its answer holds are bound into the operation's path, headers
// and body where they name them: {setup.id} is the member at /id,
// {setup.charge.id} the one at /charge/id.
type Setup struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	// RPC is a gRPC target's method (package.Service/Method).
	RPC     string            `json:"rpc,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
	// Principal indexes Target.Principals; nil: the principal of the
	// request it is made for (a resource that principal owns).
	Principal *int `json:"principal,omitempty"`
}

type setupConfig struct {
	Method    string            `yaml:"method"`
	Path      string            `yaml:"path"`
	RPC       string            `yaml:"rpc"`
	Headers   map[string]string `yaml:"headers"`
	Body      any               `yaml:"body"`
	Principal *int              `yaml:"principal"`
}

// setupOf turns a config's setup: into a Setup; at names the field.
func setupOf(at string, sc *setupConfig) (*Setup, error) {
	if sc == nil {
		return nil, nil
	}
	s := &Setup{Method: strings.ToUpper(sc.Method), Path: sc.Path, RPC: sc.RPC, Headers: sc.Headers, Principal: sc.Principal}
	if sc.RPC != "" {
		if sc.Method != "" || sc.Path != "" {
			return nil, fmt.Errorf("%s.setup.rpc: a gRPC setup has no method or path (rpc: package.Service/Method is both)", at)
		}
		s.Method, s.Path = http.MethodPost, "/"+sc.RPC
	}
	if s.Method == "" {
		s.Method = http.MethodPost
	}
	if sc.Body != nil {
		b, err := jsonx.Encode(sc.Body)
		if err != nil {
			return nil, fmt.Errorf("%s.setup.body: %v", at, err)
		}
		s.Body = b
	}
	return s, nil
}

// SetupOperation is s as an operation of its own, for the builders of
// requests (wire.Build): name names it in the evidence.
func (s *Setup) SetupOperation(name string) *Operation {
	return &Operation{Name: name, Method: s.Method, Path: s.Path, RPC: s.RPC, Headers: s.Headers, Body: s.Body}
}

// setupRef matches a reference to a setup value: {setup.id},
// {setup.charge.id}.
var setupRef = regexp.MustCompile(`\{setup\.([A-Za-z0-9_\-.]+)\}`)

// SetupRefs lists the pointers (/id, /charge/id) that op's path, headers
// and body name as {setup.…}, in the order they first appear.
func (op *Operation) SetupRefs() []string {
	var out []string
	add := func(s string) {
		for _, m := range setupRef.FindAllStringSubmatch(s, -1) {
			p := "/" + strings.ReplaceAll(m[1], ".", "/")
			if !containsString(out, p) {
				out = append(out, p)
			}
		}
	}
	add(op.Path)
	for _, v := range op.Headers {
		add(v)
	}
	add(string(op.Body))
	for _, m := range op.Mutations {
		add(string(m.Patch))
	}
	for _, v := range op.Variants {
		add(string(v.Patch))
		add(string(v.Raw))
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// BindSetup replaces every {setup.…} reference in s with the value at its
// pointer in vals; inJSON escapes the value for a JSON string.
func BindSetup(s string, vals map[string]string, inJSON bool) string {
	if !strings.Contains(s, "{setup.") {
		return s
	}
	return setupRef.ReplaceAllStringFunc(s, func(ref string) string {
		p := "/" + strings.ReplaceAll(setupRef.FindStringSubmatch(ref)[1], ".", "/")
		v, ok := vals[p]
		if !ok {
			return ref
		}
		if inJSON {
			b, _ := json.Marshal(v)
			return string(b[1 : len(b)-1])
		}
		return v
	})
}

// validateKind checks op's kind, version_pointer and setup at at.
func (t *Target) validateKind(at string, op *Operation) error {
	switch op.Kind {
	case "", KindCreate, KindUpdate:
	default:
		return fmt.Errorf("%s.kind %q: want create or update", at, op.Kind)
	}
	if _, err := jsonx.ParsePointer(op.VersionPointer); err != nil {
		return fmt.Errorf("%s.version_pointer %q: %v", at, op.VersionPointer, err)
	}
	if op.VersionPointer != "" && !op.Updates() {
		return fmt.Errorf("%s.version_pointer %q: only an update (kind: update) has one; a create is counted by its id_pointer", at, op.VersionPointer)
	}
	refs := op.SetupRefs()
	s := op.Setup
	switch {
	case s == nil && len(refs) > 0:
		return fmt.Errorf("%s: names {setup%s} but has no setup: request to make the resource", at, strings.ReplaceAll(refs[0], "/", "."))
	case s == nil:
		return nil
	case len(refs) == 0:
		return fmt.Errorf("%s.setup: nothing in the operation's path, headers or body names a value of its answer ({setup.id})", at)
	case !validMethods[s.Method]:
		return fmt.Errorf("%s.setup.method %q: want POST, PUT, PATCH, DELETE or GET", at, s.Method)
	case !strings.HasPrefix(s.Path, "/"):
		return fmt.Errorf("%s.setup.path %q: want a path starting with /", at, s.Path)
	case len(s.Body) > 0 && !jsonx.IsObject(s.Body):
		return fmt.Errorf("%s.setup.body: want a JSON object", at)
	case s.Principal != nil && (*s.Principal < 0 || *s.Principal >= len(t.Principals)):
		return fmt.Errorf("%s.setup.principal %d: want an index into principals (%d configured)", at, *s.Principal, len(t.Principals))
	}
	return nil
}

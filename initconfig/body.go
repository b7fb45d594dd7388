package initconfig

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// jsonMedia is the operation's JSON request body media type.
func jsonMedia(c openapi3.Content) (string, *openapi3.MediaType) {
	for _, mt := range sortedKeys(c) {
		if strings.Contains(strings.ToLower(mt), "json") && c[mt] != nil {
			return mt, c[mt]
		}
	}
	return "", nil
}

// body is the request body: from an example, else generated from the
// schema's required members; the note says which, and whether it
// validates.
type body struct {
	value  map[string]any
	schema *openapi3.Schema
	// mediaType is the JSON media type the operation declares (sent as
	// Content-Type: application/merge-patch+json for a merge-patch PATCH).
	mediaType string
	how       string // "from the example X" or "generated from ..."
	gap       string // a TODO, when the body could not be made valid
}

func (a *analysis) body(o operation) (*body, string) {
	if o.op.RequestBody == nil || o.op.RequestBody.Value == nil {
		if o.method == http.MethodPost || o.method == http.MethodPatch || o.method == http.MethodPut {
			return nil, "the document declares no request body"
		}
		return nil, ""
	}
	mt, media := jsonMedia(o.op.RequestBody.Value.Content)
	if media == nil {
		return nil, fmt.Sprintf("the request body is not JSON (%s): idemcheck sends JSON bodies", strings.Join(sortedKeys(o.op.RequestBody.Value.Content), ", "))
	}
	var s *openapi3.Schema
	if media.Schema != nil {
		s = media.Schema.Value
	}
	b := &body{schema: s, mediaType: mt}
	type example struct {
		v   any
		how string
	}
	var examples []example
	if media.Example != nil {
		examples = append(examples, example{media.Example, "the " + mt + " example"})
	}
	for _, name := range sortedKeys(media.Examples) {
		if e := media.Examples[name]; e != nil && e.Value != nil && e.Value.Value != nil {
			examples = append(examples, example{e.Value.Value, fmt.Sprintf("the example %q", name)})
		}
	}
	if s != nil && s.Example != nil {
		examples = append(examples, example{s.Example, "the schema's example"})
	}
	if s != nil && len(s.Examples) > 0 {
		examples = append(examples, example{s.Examples[0], "the schema's first example"})
	}
	for _, e := range examples {
		m, ok := e.v.(map[string]any)
		if !ok {
			continue
		}
		b.value, b.how = m, "from "+e.how
		if s != nil {
			if err := validate(a.doc, s, m); err != nil {
				b.gap = "the example does not validate against the schema: " + err.Error()
			}
		}
		return b, ""
	}
	if s == nil {
		return nil, "the request body has no schema and no example"
	}
	v, ok := sample(s, 0).(map[string]any)
	if !ok {
		return nil, "the request body is not a JSON object: idemcheck needs an object (mutations are merge patches)"
	}
	b.value, b.how = v, "guessed: generated from the schema's required members"
	if err := validate(a.doc, s, v); err != nil {
		b.gap = "the generated body does not validate against the schema: " + err.Error()
	}
	return b, ""
}

// mutation is a changed member, valid against the schema.
type mutation struct {
	name  string
	patch map[string]any
}

// mutations change up to two required members (one at a time), else add
// an optional one; each patched body validates.
func (a *analysis) mutations(b *body) []mutation {
	if b == nil {
		return nil
	}
	var f flat
	if b.schema != nil {
		f = flatten(b.schema)
	}
	var out []mutation
	members := sortedKeys(b.value)
	if len(f.required) > 0 {
		members = f.required
	}
	for _, name := range members {
		v, ok := b.value[name]
		if !ok {
			continue
		}
		// A free-form string reads better with a suffix; the schema (a
		// pattern, a length) may only allow a same-shaped one.
		var candidates []any
		if sv, ok := v.(string); ok && sv != "" && (f.properties[name] == nil || f.properties[name].Format == "") {
			candidates = append(candidates, sv+"-2")
		}
		if nv, ok := changed(f.properties[name], v); ok {
			candidates = append(candidates, nv)
		}
		for _, nv := range candidates {
			patch := map[string]any{name: nv}
			if a.validPatch(b, patch) {
				out = append(out, mutation{"changed-" + slug(name), patch})
				break
			}
		}
		if len(out) == 2 {
			return out
		}
	}
	for _, name := range sortedKeys(f.properties) {
		p := f.properties[name]
		if _, ok := b.value[name]; ok || p.ReadOnly {
			continue
		}
		patch := map[string]any{name: sample(p, 1)}
		if a.validPatch(b, patch) {
			return append(out, mutation{"added-" + slug(name), patch})
		}
	}
	return out
}

func (a *analysis) validPatch(b *body, patch map[string]any) bool {
	if b.schema == nil {
		return true
	}
	merged := map[string]any{}
	for k, v := range b.value {
		merged[k] = v
	}
	for k, v := range patch {
		merged[k] = v
	}
	return validate(a.doc, b.schema, merged) == nil
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// invalid is a patch that breaks the type of a required member, for the
// invalid variant, when the document declares a 400 or 422 answer.
func (a *analysis) invalid(o operation, b *body) (map[string]any, int, string) {
	if b == nil || b.schema == nil || o.op.Responses == nil {
		return nil, 0, ""
	}
	// The status is kept only when the document leaves no choice: with
	// both 400 and 422 declared, any 4xx will do.
	var declared []int
	for _, s := range []int{400, 422} {
		if o.op.Responses.Status(s) != nil {
			declared = append(declared, s)
		}
	}
	if len(declared) == 0 {
		return nil, 0, ""
	}
	status := declared[0]
	if len(declared) > 1 {
		status = 0
	}
	f := flatten(b.schema)
	for _, name := range f.required {
		p := f.properties[name]
		if p == nil {
			continue
		}
		var bad any
		switch typeOf(p) {
		case "integer", "number":
			bad = "not-a-number"
		case "boolean":
			bad = "not-a-boolean"
		case "string":
			bad = 12345
		default:
			continue
		}
		patch := map[string]any{name: bad}
		if !a.validPatch(b, patch) {
			return patch, status, fmt.Sprintf("%s of the wrong type; the document declares %s", name, joinInts(declared, " and "))
		}
	}
	return nil, 0, ""
}

func joinInts(ns []int, sep string) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}

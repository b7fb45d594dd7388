package initconfig

import (
	"fmt"
	"net/http"
	"regexp"
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
	out := a.memberMutations(b, f)
	// One per repeated member too: a fingerprint that leaves an array
	// (the order's items) out is a defect only a changed array shows.
	return append(out, a.arrayMutations(b, f)...)
}

// memberMutations change up to two scalar members (the required ones
// first), else add an optional member.
func (a *analysis) memberMutations(b *body, f flat) []mutation {
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

// arrayMutations change each array member of the body: its first item
// changed, else one more item (a copy of the first), whichever the schema
// allows.
func (a *analysis) arrayMutations(b *body, f flat) []mutation {
	var out []mutation
	for _, name := range sortedKeys(b.value) {
		arr, ok := b.value[name].([]any)
		if !ok || len(arr) == 0 {
			continue
		}
		var items *openapi3.Schema
		if p := f.properties[name]; p != nil {
			items = itemSchema(p)
		}
		var candidates [][]any
		if nv, ok := changedItem(items, arr[0]); ok {
			candidates = append(candidates, append([]any{nv}, arr[1:]...))
		}
		candidates = append(candidates, append(append([]any{}, arr...), arr[0]))
		for _, c := range candidates {
			patch := map[string]any{name: c}
			if a.validPatch(b, patch) {
				out = append(out, mutation{"changed-" + slug(name), patch})
				break
			}
		}
	}
	return out
}

// changedItem is an array item changed: a scalar as changed does, an
// object in its first member that changes.
func changedItem(s *openapi3.Schema, v any) (any, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		return changed(s, v)
	}
	var props map[string]*openapi3.Schema
	if s != nil {
		props = flatten(s).properties
	}
	for _, k := range sortedKeys(obj) {
		if nv, ok := changed(props[k], obj[k]); ok {
			out := make(map[string]any, len(obj))
			for kk, vv := range obj {
				out[kk] = vv
			}
			out[k] = nv
			return out, true
		}
	}
	return nil, false
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
// invalid variant, when the document declares a 400 or 422 answer. Its
// status is one the document gives no other meaning: a 422 described as a
// key reused with another body is the mismatch answer (mismatch_status),
// and expecting it for a bad body would make the case inconclusive on a
// correct API. taken are the statuses init gives such meanings across the
// document. gap is a TODO when no declared status is left.
func (a *analysis) invalid(o operation, b *body, taken map[int]string) (patch map[string]any, status int, why, gap string) {
	if b == nil || b.schema == nil || o.op.Responses == nil {
		return nil, 0, "", ""
	}
	var declared, usable []int
	var others []string
	for _, s := range []int{400, 422} {
		r := o.op.Responses.Status(s)
		if r == nil {
			continue
		}
		declared = append(declared, s)
		if meaning := otherMeaning(o, s, r, taken); meaning != "" {
			others = append(others, meaning)
			continue
		}
		usable = append(usable, s)
	}
	if len(declared) == 0 {
		return nil, 0, "", ""
	}
	// The status is kept only when the document leaves no choice: with
	// both 400 and 422 free, any 4xx will do.
	said := "the document declares " + joinInts(usable, " and ")
	if len(usable) == 1 {
		status = usable[0]
	}
	if len(others) > 0 {
		not := "not " + strings.Join(others, "; ")
		if len(usable) == 0 {
			said = ""
			gap = "the status the API answers a bad body with, any 4xx meanwhile (" + not + ")"
		} else {
			said += " (" + not + ")"
		}
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
			why := name + " of the wrong type"
			if said != "" {
				why += "; " + said
			}
			return patch, status, why, gap
		}
	}
	return nil, 0, "", ""
}

// otherMeaning says why status s of o is not a bad body's answer, as
// "422: its 422 says ..." when its description reads as a changed body or
// a key in flight or init gives it that meaning elsewhere (taken); "" when
// it has none.
func otherMeaning(o operation, s int, r *openapi3.ResponseRef, taken map[int]string) string {
	if r.Value != nil && r.Value.Description != nil {
		for _, re := range []*regexp.Regexp{mismatchRE, inFlightRE} {
			if m := re.FindString(*r.Value.Description); m != "" {
				return fmt.Sprintf("%d: its %d says %q", s, s, m)
			}
		}
	}
	if where, ok := taken[s]; ok {
		return fmt.Sprintf("%d, the %s", s, where)
	}
	return ""
}

func joinInts(ns []int, sep string) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}

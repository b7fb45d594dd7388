package apispec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DerivedMutation is the changed body idemcheck derives from op's body when
// the config declares no mutation of the body: the body's first number (in
// document order, outside arrays, which a merge patch cannot reach) plus one, else
// its first boolean negated. Such a member is part of what the request
// asks for (an amount, a quantity, a flag), so a replay of the old
// response for it is judged as for a configured mutation. ok is false when
// op declares a body mutation or its body has no such member.
func DerivedMutation(op *Operation) (m Mutation, ok bool) {
	if op == nil || slices.ContainsFunc(op.Mutations, Mutation.ChangesBody) {
		return Mutation{}, false
	}
	path, from, to, ok := changedScalar(op.Body)
	if !ok {
		return Mutation{}, false
	}
	patch := json.RawMessage(to)
	for i := len(path) - 1; i >= 0; i-- {
		b, err := json.Marshal(map[string]json.RawMessage{path[i]: patch})
		if err != nil { // a RawMessage from our own encoding: cannot fail
			return Mutation{}, false
		}
		patch = b
	}
	return Mutation{Name: fmt.Sprintf("derived: %s %s → %s", pointerOf(path), from, to), Patch: patch}, true
}

// DerivedNote says, for `list`, which operations get a derived mutation
// and what it changes; nil when none does.
func DerivedNote(t *Target) []string {
	var out []string
	for i := range t.Operations {
		op := &t.Operations[i]
		if m, ok := DerivedMutation(op); ok {
			what := "body" // a gRPC call's body is its request message
			if t.IsGRPC() {
				what = "message"
			}
			out = append(out, fmt.Sprintf("operations[%d] %s declares no %s mutation: the mismatch cases send a mutation derived from its %s (%s); operations[%d].mutations chooses your own",
				i, op.Name, what, what, strings.TrimPrefix(m.Name, "derived: "), i))
		}
	}
	return out
}

// RequestMutationNote says, for `list`, that no operation declares a
// mutation of the query or of a header field, and the config line that
// adds one; "" when one does.
func RequestMutationNote(t *Target) string {
	for _, op := range t.Operations {
		for _, m := range op.Mutations {
			if m.ChangesQuery() || len(m.Headers) > 0 {
				return ""
			}
		}
	}
	if t.IsGRPC() { // a call has no query; headers: are sent as metadata
		return `no operation declares a mutation of the metadata: mismatch/changed-body changes messages only; add one to operations[].mutations, e.g. {name: other-version, headers: {x-api-version: "2024-06-01"}} (sent as metadata)`
	}
	return `no operation declares a mutation of the query or of a header field: mismatch/changed-body changes bodies only; add one to operations[].mutations, e.g. {name: authorise-only, query: {capture: "false"}} or {name: other-version, headers: {Api-Version: "2024-06-01"}}`
}

// changedScalar finds the member DerivedMutation changes: its path, its
// value and the changed value, as JSON.
func changedScalar(body []byte) (path []string, from, to string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var firstBool []string
	var boolVal bool
	var walk func(at []string, inArray bool) error
	walk = func(at []string, inArray bool) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' {
				for dec.More() {
					k, err := dec.Token()
					if err != nil {
						return err
					}
					if err := walk(append(at[:len(at):len(at)], k.(string)), inArray); err != nil || ok {
						return err
					}
				}
			} else if v == '[' {
				for dec.More() {
					if err := walk(at, true); err != nil || ok {
						return err
					}
				}
			}
			_, err := dec.Token() // the closing delimiter
			return err
		case json.Number:
			if inArray || len(at) == 0 {
				return nil
			}
			if next, good := plusOne(v); good {
				path, from, to, ok = at, v.String(), next, true
			}
		case bool:
			if !inArray && len(at) > 0 && firstBool == nil {
				firstBool, boolVal = at, v
			}
		}
		return nil
	}
	if err := walk(nil, false); err != nil {
		return nil, "", "", false
	}
	if ok {
		return path, from, to, true
	}
	if firstBool != nil {
		return firstBool, strconv.FormatBool(boolVal), strconv.FormatBool(!boolVal), true
	}
	return nil, "", "", false
}

// plusOne is n + 1 written as JSON: an integer stays one.
func plusOne(n json.Number) (string, bool) {
	if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil && i < 1<<62 {
		return strconv.FormatInt(i+1, 10), true
	}
	f, err := n.Float64()
	if err != nil {
		return "", false
	}
	return strconv.FormatFloat(f+1, 'f', -1, 64), true
}

// pointerOf writes path as an RFC 6901 JSON pointer.
func pointerOf(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// MutationsOrDerived is op's configured mutations, the derived one first
// when none of them changes the body (none when the body has nothing to
// change).
func (op *Operation) MutationsOrDerived() []Mutation {
	if m, ok := DerivedMutation(op); ok {
		return append([]Mutation{m}, op.Mutations...)
	}
	return op.Mutations
}

// BodyMutation is op's first configured mutation that changes the body
// (chaos retries with a changed body: its verdicts read bodies only).
func (op *Operation) BodyMutation() (Mutation, bool) {
	if i := slices.IndexFunc(op.Mutations, Mutation.ChangesBody); i >= 0 {
		return op.Mutations[i], true
	}
	return Mutation{}, false
}

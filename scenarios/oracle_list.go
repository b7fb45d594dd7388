package scenarios

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// ListCount makes an oracle URL a list endpoint (GET /orders): the
// elements of the array at Array are counted. With Where, only those whose
// member at Where equals the key (the bare key, as the API stores it) or,
// when a downstream double runs, the token idemcheck wrote at the
// operation's marker: the list is then a per-key oracle. Without, its length is a global count
// (the run goes serial).
type ListCount struct {
	// Array is the RFC 6901 pointer to the array; "" is the body itself.
	Array string `yaml:"array" json:"array"`
	// Where is the pointer, inside each element, to the member compared
	// with the key.
	Where string `yaml:"where,omitempty" json:"where,omitempty"`
}

func (c *ListCount) String() string {
	s := "array " + c.Array
	if c.Array == "" {
		s = "array (the body)"
	}
	if c.Where != "" {
		s += " where " + c.Where
	}
	return s
}

func (c *ListCount) validate(at string) error {
	if _, err := jsonx.ParsePointer(c.Array); err != nil {
		return fmt.Errorf("%s.array %q: %v", at, c.Array, err)
	}
	if _, err := jsonx.ParsePointer(c.Where); err != nil {
		return fmt.Errorf("%s.where %q: %v", at, c.Where, err)
	}
	return nil
}

// count counts the array's elements in doc: those whose member at Where
// is one of match when Where is set and match is not empty (a total
// counts them all).
func (c *ListCount) count(doc any, match []string) (int, error) {
	v, ok := jsonx.Pointer(doc, c.Array)
	if !ok {
		return 0, fmt.Errorf("count.array %s: nothing there%s", c.Array, arrayHint(doc, c.Array))
	}
	arr, ok := v.([]any)
	if !ok {
		return 0, fmt.Errorf("count.array %s: not an array%s", c.Array, members(v))
	}
	if c.Where == "" || len(match) == 0 {
		return len(arr), nil
	}
	n := 0
	for _, el := range arr {
		if m, ok := jsonx.Pointer(el, c.Where); ok && slices.Contains(match, scalarText(m)) {
			n++
		}
	}
	return n, nil
}

// scalarText is a JSON scalar as the text compared with a key.
func scalarText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// arrayHint explains "nothing at p" when p's parent is an array (a pointer
// such as /data/length or /count written for a list): point at the array
// and its elements are counted.
func arrayHint(doc any, p string) string {
	parent := p[:max(strings.LastIndex(p, "/"), 0)]
	v, ok := jsonx.Pointer(doc, parent)
	if !ok {
		return members(doc)
	}
	if arr, ok := v.([]any); ok {
		if parent == "" {
			return fmt.Sprintf(" (the body is an array of %d: count it with count: {array: \"\"})", len(arr))
		}
		return fmt.Sprintf(" (%s is an array of %d: point at it to count its elements)", parent, len(arr))
	}
	return members(v)
}

// members lists an object's members for an error: " (members: a, b)".
func members(v any) string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return ""
	}
	return " (members: " + strings.Join(slices.Sorted(maps.Keys(m)), ", ") + ")"
}

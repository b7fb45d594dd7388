package evidence

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// count counts the array's elements in doc: those whose member at Where
// is one of match when Where is set and match is not empty (a total
// counts them all).
func listCount(c *apispec.ListCount, doc any, match []string) (int, error) {
	v, ok := jsonx.Pointer(doc, c.Array)
	if !ok {
		return 0, fmt.Errorf("count.array %s: nothing there%s", c.Array, arrayHint(doc, c.Array))
	}
	arr, ok := v.([]any)
	if !ok {
		return 0, fmt.Errorf("count.array %s: not an array%s", c.Array, jsonx.Members(v))
	}
	if c.Where == "" || len(match) == 0 {
		return len(arr), nil
	}
	n := 0
	for _, el := range arr {
		if m, ok := jsonx.Pointer(el, c.Where); ok && slices.Contains(match, jsonx.ScalarText(m)) {
			n++
		}
	}
	return n, nil
}

// arrayHint explains "nothing at p" when p's parent is an array (a pointer
// such as /data/length or /count written for a list): point at the array
// and its elements are counted.
func arrayHint(doc any, p string) string {
	parent := p[:max(strings.LastIndex(p, "/"), 0)]
	v, ok := jsonx.Pointer(doc, parent)
	if !ok {
		return jsonx.Members(doc)
	}
	if arr, ok := v.([]any); ok {
		if parent == "" {
			return fmt.Sprintf(" (the body is an array of %d: count it with count: {array: \"\"})", len(arr))
		}
		return fmt.Sprintf(" (%s is an array of %d: point at it to count its elements)", parent, len(arr))
	}
	return jsonx.Members(v)
}

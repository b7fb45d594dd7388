package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ParsePointer splits an RFC 6901 JSON pointer into unescaped reference
// tokens; "" (the whole document) has none. It rejects a pointer that does
// not start with '/' and a '~' not followed by 0 or 1.
func ParsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, errors.New("a JSON pointer must be empty or start with '/' (RFC 6901)")
	}
	toks := strings.Split(p[1:], "/")
	for i, s := range toks {
		for j := 0; j < len(s); j++ {
			if s[j] == '~' && (j+1 == len(s) || (s[j+1] != '0' && s[j+1] != '1')) {
				return nil, fmt.Errorf("'~' must be followed by 0 or 1 in %q (RFC 6901)", s)
			}
		}
		// ~1 first: "~01" is the token "~1", not "/".
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// Pointer returns the value at pointer p in a decoded JSON document (maps
// and slices as encoding/json builds them). ok is false when p is invalid
// or names nothing.
func Pointer(doc any, p string) (v any, ok bool) {
	toks, err := ParsePointer(p)
	if err != nil {
		return nil, false
	}
	cur := doc
	for _, t := range toks {
		switch d := cur.(type) {
		case map[string]any:
			next, ok := d[t]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			// RFC 6901 array indices are decimal without sign; Atoi's
			// leniency ("+1") does not matter for lookups we only read.
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(d) {
				return nil, false
			}
			cur = d[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// MergePatch applies an RFC 7386 JSON merge patch to doc. An empty doc is
// an absent target (the patch's members are all that remains).
func MergePatch(doc, patch []byte) ([]byte, error) {
	var d, p any
	if len(doc) > 0 {
		if err := json.Unmarshal(doc, &d); err != nil {
			return nil, fmt.Errorf("body is not JSON: %w", err)
		}
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("patch is not JSON: %w", err)
	}
	return json.Marshal(applyMerge(d, p))
}

// applyMerge is RFC 7386 §2's MergePatch(Target, Patch) on decoded values.
func applyMerge(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = applyMerge(tm[k], v)
	}
	return tm
}

// Replace returns doc with the value at pointer p swapped for value (raw
// JSON) and every other byte kept as it was, so a body's formatting and
// member order survive. ok is false when p is invalid or names nothing.
func Replace(doc []byte, p string, value []byte) (out []byte, ok bool) {
	start, end, ok := Span(doc, p)
	if !ok {
		return nil, false
	}
	out = make([]byte, 0, len(doc)-(end-start)+len(value))
	out = append(append(append(out, doc[:start]...), value...), doc[end:]...)
	return out, true
}

// Span is where the value at pointer p lies in doc: doc[start:end]. ok is
// false when p is invalid or names nothing.
func Span(doc []byte, p string) (start, end int, ok bool) {
	toks, err := ParsePointer(p)
	if err != nil {
		return 0, 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	return valueSpan(dec, doc, toks)
}

// valueSpan finds the bytes [start, end) of the value at toks, reading the
// value that starts at dec's position.
func valueSpan(dec *json.Decoder, doc []byte, toks []string) (start, end int, ok bool) {
	if len(toks) == 0 {
		start = int(dec.InputOffset())
		// The decoder reads a member's ':' (and an element's ',') lazily.
		for start < len(doc) && strings.IndexByte(" \t\r\n:,", doc[start]) >= 0 {
			start++
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return 0, 0, false
		}
		return start, int(dec.InputOffset()), true
	}
	tok, err := dec.Token()
	if err != nil {
		return 0, 0, false
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return 0, 0, false
			}
			if k == toks[0] {
				return valueSpan(dec, doc, toks[1:])
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 0, 0, false
			}
		}
	case json.Delim('['):
		i, err := strconv.Atoi(toks[0])
		if err != nil || i < 0 {
			return 0, 0, false
		}
		for n := 0; dec.More(); n++ {
			if n == i {
				return valueSpan(dec, doc, toks[1:])
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 0, 0, false
			}
		}
	}
	return 0, 0, false
}

// IsObject reports whether b holds a JSON object.
func IsObject(b []byte) bool {
	var m map[string]any
	return json.Unmarshal(b, &m) == nil && m != nil
}

// Decode decodes with UseNumber so numbers keep their exact value
// (see canonicalNumber).
func Decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	// d.More() alone lets a stray closing bracket through ("{}}"); only
	// whitespace may follow the value.
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

// ScalarText is a JSON scalar as text (a string as is, a number as
// written, null as ""): how an id or a key found in a document is compared.
func ScalarText(v any) string {
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

// Members lists an object's members for an error: " (members: a, b)".
func Members(v any) string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return ""
	}
	return " (members: " + strings.Join(slices.Sorted(maps.Keys(m)), ", ") + ")"
}

// PointerText is the scalar at an RFC 6901 pointer in a JSON body, as text
// (ScalarText); "" when absent or the body is not JSON. Only the first
// JSON value of body is read.
func PointerText(body []byte, pointer string) string {
	var doc any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if d.Decode(&doc) != nil {
		return ""
	}
	v, ok := Pointer(doc, pointer)
	if !ok {
		return ""
	}
	return ScalarText(v)
}

// Encode is a decoded YAML or JSON value (a config body or patch) as
// JSON; nil stays nil. The error says the value has no JSON form.
func Encode(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not representable as JSON: %v", err)
	}
	return b, nil
}

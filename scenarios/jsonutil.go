package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// decodeJSON decodes with UseNumber so numbers compare exactly.
func decodeJSON(b []byte) (any, error) {
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

// jsonEqual reports whether a and b are equal JSON documents (bodies that
// are not JSON: equal bytes). It is ReplayForm's json rule.
func jsonEqual(a, b []byte) bool {
	return bytes.Equal(ReplayForm(CompareJSON, a), ReplayForm(CompareJSON, b))
}

// canonicalJSON re-encodes a JSON document one way: members sorted by
// name, no whitespace, numbers as written. Two documents are equal
// exactly when their canonical encodings are.
func canonicalJSON(b []byte) ([]byte, error) {
	v, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// isJSONObject reports whether b holds a JSON object.
func isJSONObject(b []byte) bool {
	var m map[string]any
	return json.Unmarshal(b, &m) == nil && m != nil
}

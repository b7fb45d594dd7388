package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
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

// jsonEqual reports whether a and b are equal JSON documents.
func jsonEqual(a, b []byte) bool {
	va, errA := decodeJSON(a)
	vb, errB := decodeJSON(b)
	if errA != nil || errB != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

// isJSONObject reports whether b holds a JSON object.
func isJSONObject(b []byte) bool {
	var m map[string]any
	return json.Unmarshal(b, &m) == nil && m != nil
}

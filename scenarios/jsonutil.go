package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"strconv"
	"strings"
)

// decodeJSON decodes with UseNumber so numbers compare exactly (see
// numberEqual).
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

// jsonEqual reports whether a and b are equal JSON documents: members in
// any order, numbers by value (1.0 = 1 = 1e0: a replay re-serialised from
// a stored document may spell a number another way, and JSON does not
// tell them apart). Anything but JSON compares as bytes.
func jsonEqual(a, b []byte) bool {
	va, errA := decodeJSON(a)
	vb, errB := decodeJSON(b)
	if errA != nil || errB != nil {
		return bytes.Equal(a, b)
	}
	return jsonValueEqual(va, vb)
}

// jsonValueEqual compares two decodeJSON values, numbers by value.
func jsonValueEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numberEqual(x, y)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !jsonValueEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonValueEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b // string, bool, nil
}

// maxExponent bounds the exponents numberEqual evaluates exactly: 1e999999999
// would take big.Rat minutes. Larger ones compare as written.
const maxExponent = 1000

// numberEqual compares two JSON numbers exactly by value.
func numberEqual(x, y json.Number) bool {
	if x == y {
		return true
	}
	var rx, ry big.Rat
	if hugeExponent(string(x)) || hugeExponent(string(y)) {
		return false
	}
	if _, ok := rx.SetString(string(x)); !ok {
		return false
	}
	if _, ok := ry.SetString(string(y)); !ok {
		return false
	}
	return rx.Cmp(&ry) == 0
}

func hugeExponent(n string) bool {
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return false
	}
	e, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
	return err != nil || e > maxExponent || e < -maxExponent
}

// isJSONObject reports whether b holds a JSON object.
func isJSONObject(b []byte) bool {
	var m map[string]any
	return json.Unmarshal(b, &m) == nil && m != nil
}

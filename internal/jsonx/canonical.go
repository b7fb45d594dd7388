package jsonx

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
)

// Canonical re-encodes a JSON document one way: members sorted by
// name, no whitespace, every number in one spelling of its value
// (canonicalNumber). Two documents are equal exactly when their canonical
// encodings are, so a hash of it compares replays too.
func Canonical(b []byte) ([]byte, error) {
	v, err := Decode(b)
	if err != nil {
		return nil, err
	}
	return json.Marshal(canonicalNumbers(v))
}

// canonicalNumbers replaces every number in a Decode value by its
// canonical spelling.
func canonicalNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return canonicalNumber(x)
	case map[string]any:
		for k, w := range x {
			x[k] = canonicalNumbers(w)
		}
	case []any:
		for i, w := range x {
			x[i] = canonicalNumbers(w)
		}
	}
	return v
}

// maxExponent bounds the exponents canonicalNumber evaluates: 1e999999999
// would take big.Rat minutes. Larger ones keep their spelling.
const maxExponent = 1000

// canonicalNumber spells n's exact value one way: an integer in digits
// (1.0, 1e0, 10e-1 -> 1; -0 -> 0), a fraction as the shortest exact
// decimal (5E-1 -> 0.5), beyond float64 precision too.
func canonicalNumber(n json.Number) json.Number {
	var r big.Rat
	if hugeExponent(string(n)) {
		return n
	}
	if _, ok := r.SetString(string(n)); !ok {
		return n
	}
	if r.IsInt() {
		return json.Number(r.Num().String())
	}
	// A decimal literal's exact value needs no more fraction digits than
	// it wrote, plus its negative exponent.
	mant, exp, _ := strings.Cut(strings.ToLower(string(n)), "e")
	_, frac, _ := strings.Cut(mant, ".")
	e, _ := strconv.Atoi(strings.TrimPrefix(exp, "+"))
	d := strings.TrimRight(r.FloatString(max(len(frac)-e, 1)), "0")
	return json.Number(strings.TrimSuffix(d, "."))
}

func hugeExponent(n string) bool {
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return false
	}
	e, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
	return err != nil || e > maxExponent || e < -maxExponent
}

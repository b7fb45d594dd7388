package reference

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// fingerprint is the SHA-256 of the body in canonical form: a JSON object or
// array is re-serialized per RFC 8785 (JCS), minus the ignored top-level
// members; any other body is hashed as raw bytes. The prefix keeps the two
// kinds apart.
func fingerprint(body []byte, ignore map[string]bool) string {
	h := sha256.New()
	if canon, ok := canonicalJSON(body, ignore); ok {
		h.Write([]byte("json:"))
		h.Write(canon)
	} else {
		h.Write([]byte("raw:"))
		h.Write(body)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

const jsonSpace = " \t\r\n"

// canonicalJSON returns the RFC 8785 form of body, or false when body is not
// a JSON object or array that canonicalizes without merging distinct values:
// invalid UTF-8 and lone surrogate escapes (which encoding/json would turn
// into U+FFFD) and absurd exponents are hashed raw instead.
func canonicalJSON(body []byte, ignore map[string]bool) ([]byte, bool) {
	// JSON's own whitespace only: bytes.TrimSpace would also drop Unicode
	// spaces (U+00A0, U+0085), and an invalid body must not share a
	// fingerprint with a valid one.
	trimmed := bytes.Trim(body, jsonSpace)
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		return nil, false
	}
	if !utf8.Valid(trimmed) || hasLoneSurrogate(trimmed) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	// The whole body must be the one value: dec.More() alone lets a stray
	// closing bracket through ("{}}").
	if err := dec.Decode(&v); err != nil || dec.InputOffset() != int64(len(trimmed)) {
		return nil, false
	}
	if obj, ok := v.(map[string]any); ok {
		for name := range ignore {
			delete(obj, name)
		}
	}
	out := make([]byte, 0, len(trimmed))
	out, ok := appendCanonical(out, v)
	return out, ok
}

func appendCanonical(out []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(out, "null"...), true
	case bool:
		return strconv.AppendBool(out, v), true
	case string:
		return appendString(out, v), true
	case json.Number:
		return appendNumber(out, string(v))
	case []any:
		out = append(out, '[')
		for i, e := range v {
			if i > 0 {
				out = append(out, ',')
			}
			var ok bool
			if out, ok = appendCanonical(out, e); !ok {
				return nil, false
			}
		}
		return append(out, ']'), true
	case map[string]any:
		names := make([]string, 0, len(v))
		for name := range v {
			names = append(names, name)
		}
		slices.SortFunc(names, compareUTF16)
		out = append(out, '{')
		for i, name := range names {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(appendString(out, name), ':')
			var ok bool
			if out, ok = appendCanonical(out, v[name]); !ok {
				return nil, false
			}
		}
		return append(out, '}'), true
	}
	return nil, false // unreachable for what encoding/json decodes into any
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785 3.2.3),
// which differs from Go's byte order only between supplementary characters
// and U+E000..U+FFFF, without allocating the UTF-16 form.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			if c := int(firstUnit(ra)) - int(firstUnit(rb)); c != 0 {
				return c
			}
			// Same high surrogate: the low surrogates order as the runes.
			return int(ra) - int(rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// firstUnit is the first UTF-16 code unit of r.
func firstUnit(r rune) rune {
	if r < 0x10000 {
		return r
	}
	return 0xD800 + (r-0x10000)>>10
}

// appendString writes s as RFC 8785 3.2.2.2 requires: only '"', '\\' and
// control characters are escaped, the five with a short form as \b \t \n
// \f \r, the others as lowercase \u00xx; everything else is literal UTF-8.
func appendString(out []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\t':
			out = append(out, '\\', 't')
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// maxExponent bounds a number's decimal exponent: far beyond any double
// (1e±400) yet far from int overflow; a body past it is hashed raw.
const maxExponent = 1 << 40

// appendNumber writes the JSON number text in the ECMAScript Number
// toString layout RFC 8785 3.2.2.3 prescribes, from the number's exact
// decimal value rather than its nearest double. For every number that is
// the shortest spelling of a double (whatever any JSON encoder emits) the
// output equals RFC 8785's: 1.0, 1e0 and 1 all give "1", 1E30 gives
// "1e+30". A number with more precision than a double holds
// (12345678901234567890, 9007199254740993) keeps its exact digits instead
// of being rounded, so two different values never share a fingerprint;
// RFC 8785 would round them (I-JSON leaves such numbers undefined).
func appendNumber(out []byte, text string) ([]byte, bool) {
	neg := strings.HasPrefix(text, "-")
	text = strings.TrimPrefix(text, "-")
	mant, exp := text, 0
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(text[i+1:], "+"))
		if err != nil || e > maxExponent || e < -maxExponent {
			return nil, false
		}
		mant, exp = text[:i], e
	}
	digits := mant
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		digits = mant[:i] + mant[i+1:]
		exp -= len(mant) - i - 1
	}
	// The value is digits × 10^exp; strip zeros so each value has one form.
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return append(out, '0'), true // -0 too, as RFC 8785 requires
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed
	if neg {
		out = append(out, '-')
	}
	// k digits with the decimal point after the n-th (ECMA-262 Number::toString).
	k, n := len(digits), len(digits)+exp
	switch {
	case k <= n && n <= 21:
		out = append(out, digits...)
		for range n - k {
			out = append(out, '0')
		}
	case 0 < n && n <= 21:
		out = append(append(append(out, digits[:n]...), '.'), digits[n:]...)
	case -6 < n && n <= 0:
		out = append(out, '0', '.')
		for range -n {
			out = append(out, '0')
		}
		out = append(out, digits...)
	default:
		out = append(out, digits[0])
		if k > 1 {
			out = append(append(out, '.'), digits[1:]...)
		}
		out = append(out, 'e')
		if n-1 >= 0 {
			out = append(out, '+')
		}
		out = strconv.AppendInt(out, int64(n-1), 10)
	}
	return out, true
}

// hasLoneSurrogate reports a \uD800-\uDFFF escape not part of a
// high-low pair in JSON text the decoder will accept (so a backslash
// always starts an escape inside a string).
func hasLoneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		i++
		if i >= len(b) || b[i] != 'u' {
			continue // a one-character escape; the loop skips it
		}
		u, ok := hex4(b, i+1)
		i += 4
		switch {
		case !ok || u < 0xD800 || u > 0xDFFF:
		case u >= 0xDC00:
			return true // a low surrogate first
		default:
			lo, ok := hex4(b, i+3)
			if i+2 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' || !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// hex4 parses the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (uint16, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	u, err := strconv.ParseUint(string(b[i:i+4]), 16, 16)
	return uint16(u), err == nil
}

// Fingerprint returns what the middleware stores as the fingerprint of body
// when no fields are ignored; stores and tests use it to build records.
func Fingerprint(body []byte) string { return fingerprint(body, nil) }

// FingerprintJSON is the fingerprint the middleware stores for a JSON
// body, for a front end that is not HTTP (the gRPC reference hashes a
// request message's protojson form with it, so two encodings of one
// message share a fingerprint).
func FingerprintJSON(body []byte) string { return fingerprint(body, nil) }

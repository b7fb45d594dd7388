package reference

import (
	"errors"
	"strings"

	"github.com/dunglas/httpsfv"
)

// MaxKeyLen is the longest key accepted, in characters (Stripe's limit).
const MaxKeyLen = 255

var (
	errKeyMissing   = errors.New("missing")
	errKeyLines     = errors.New("the Idempotency-Key field must appear exactly once")
	errKeyLength    = errors.New("the key must be 1 to 255 characters long")
	errKeyCharset   = errors.New("the key must consist of visible ASCII characters only")
	errKeyNotString = errors.New("the Idempotency-Key field must be an sf-string (\"...\")")
	errKeySyntax    = errors.New("the Idempotency-Key field is neither an sf-string nor a plain token")
)

// parseKey extracts the key from the request's field lines. The draft's
// sf-string form ("abc") and, when raw is allowed, the bare form (abc) give
// the same key, so a client may switch spelling without a double execution.
func parseKey(lines []string, raw bool) (string, error) {
	switch len(lines) {
	case 0:
		return "", errKeyMissing
	case 1:
	default:
		return "", errKeyLines
	}
	v := strings.TrimSpace(lines[0])
	if v == "" {
		return "", errKeyLength
	}
	var key string
	if k, ok := plainSFString(lines[0]); ok {
		key = k
	} else if v[0] == '"' {
		// sf-string: the structured-field parser handles escapes and
		// rejects trailing garbage and lists.
		item, err := httpsfv.UnmarshalItem(lines)
		if err != nil {
			return "", errKeySyntax
		}
		s, ok := item.Value.(string)
		if !ok {
			return "", errKeyNotString
		}
		key = s
	} else {
		if !raw {
			return "", errKeyNotString
		}
		// A comma means two field lines folded into one by a proxy.
		if strings.ContainsAny(v, ",\"") {
			return "", errKeySyntax
		}
		key = v
	}
	return key, validKey(key)
}

// plainSFString returns the content of a field that is exactly one
// sf-string without escapes or parameters ("abc"): what the
// structured-field parser would return for it, without parsing.
func plainSFString(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	in := v[1 : len(v)-1]
	for i := 0; i < len(in); i++ {
		if c := in[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "", false
		}
	}
	return in, true
}

func validKey(k string) error {
	if len(k) == 0 || len(k) > MaxKeyLen {
		return errKeyLength
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return errKeyCharset
		}
	}
	return nil
}

// rawKey is how the unvalidated-key defect reads the field's lines: all
// folded, one pair of quotes stripped, no checks at all.
func rawKey(lines []string) (string, bool) {
	if len(lines) == 0 {
		return "", false
	}
	v := strings.TrimSpace(strings.Join(lines, ","))
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return v, true
}

package reference

import (
	"testing"

	"github.com/dunglas/httpsfv"
)

// TestPlainSFStringAgreesWithParser: the key fast path accepts only fields
// the structured-field parser reads as the same string, and leaves every
// other spelling to the parser.
func TestPlainSFStringAgreesWithParser(t *testing.T) {
	for _, tc := range []struct {
		field string
		fast  bool
		why   string
	}{
		{`"abc"`, true, "the common case"},
		{`"a b"`, true, "a space is an sf-string character (validKey rejects it later)"},
		{`""`, true, "empty string (validKey rejects it later)"},
		{`"a\"b"`, false, "an escape: the parser unescapes"},
		{`"a\\b"`, false, "an escaped backslash"},
		{`"abc";p=1`, false, "parameters: not a bare string"},
		{`"abc", "d"`, false, "a list"},
		{" \"abc\"", false, "surrounding space: the parser trims it"},
		{"\"a\tb\"", false, "a control character: the parser rejects it"},
		{"\"caf\u00e9\"", false, "non-ASCII: the parser rejects it"},
		{`abc`, false, "a token, not a string"},
		{`"`, false, "a lone quote"},
	} {
		got, ok := plainSFString(tc.field)
		if ok != tc.fast {
			t.Errorf("%q: fast path %v, want %v (%s)", tc.field, ok, tc.fast, tc.why)
			continue
		}
		if !ok {
			continue
		}
		item, err := httpsfv.UnmarshalItem([]string{tc.field})
		if err != nil || item.Value != got || len(item.Params.Names()) != 0 {
			t.Errorf("%q: fast path %q, parser %v %v (%s)", tc.field, got, item.Value, err, tc.why)
		}
	}
}

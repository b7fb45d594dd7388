package reference

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dunglas/httpsfv"
)

// FuzzParseKey feeds arbitrary Idempotency-Key field values to the parser.
// Properties: an accepted key is valid (1..255 visible ASCII); it
// re-marshals as an sf-string that parses back to the same key in strict
// mode; and in raw mode the bare spelling of a key without quote or comma
// parses to the same key (so switching spelling never double-executes).
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{
		`"abc"`, `abc`, `""`, `"a\"b"`, `"a\\b"`, `"abc";p=1`, `"a", "b"`, `a,b`, `"abc`,
		` "padded" `, `?1`, `42`, `:YWJj:`, `"é"`, "\"tab\there\"", strings.Repeat("k", 256),
		`"` + strings.Repeat("k", 255) + `"`, `"a b"`, `token*with/chars`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, line string, raw bool) {
		key, err := parseKey([]string{line}, raw)
		if err != nil {
			return
		}
		if verr := validKey(key); verr != nil {
			t.Fatalf("parseKey(%q) accepted invalid key %q: %v", line, key, verr)
		}
		sf, merr := httpsfv.Marshal(httpsfv.NewItem(key))
		if merr != nil {
			t.Fatalf("accepted key %q does not marshal as an sf-string: %v", key, merr)
		}
		again, err := parseKey([]string{sf}, false)
		if err != nil || again != key {
			t.Fatalf("key %q re-marshalled as %s parses to %q, %v", key, sf, again, err)
		}
		if raw && !strings.ContainsAny(key, `",`) {
			bare, err := parseKey([]string{key}, true)
			if err != nil || bare != key {
				t.Fatalf("key %q in raw spelling parses to %q, %v", key, bare, err)
			}
		}
	})
}

// FuzzCanonicalJSON checks the fingerprint's canonical form. Properties:
// only a body that is one valid JSON value is treated as JSON (anything
// else is hashed raw, so an invalid body never shares a fingerprint with a
// valid one); canonicalization is idempotent; and a body and its canonical
// form have the same fingerprint.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{
		`{"amount":100,"currency":"eur"}`, `{"currency":"eur","amount":100}`, ` { "b" : [1, 2.50, 1e3], "a" : null } `,
		`[1,2,3]`, `{"a":{"c":1,"b":2}}`, `{"a":"<&>"}`, `{"a":"\u00e9\ud83d\ude00"}`, `{"a":1,"a":2}`,
		`{"n":-0.0e-0}`, `not json`, `{}`, `[]`, `{"a":"\xff"}`, `{}}`, `[]]`, `{} {}`, "{}\u00a0", "\u0085{}",
		`{"a":1}garbage`, `{`, `"just a string"`, `12`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		canon, ok := canonicalJSON(body, nil)
		if !ok {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("invalid JSON body %q canonicalised to %q", body, canon)
		}
		if !json.Valid(canon) {
			t.Fatalf("canonical form %q of %q is not valid JSON", canon, body)
		}
		again, ok := canonicalJSON(canon, nil)
		if !ok || !bytes.Equal(again, canon) {
			t.Fatalf("canonicalization not idempotent: %q -> %q -> %q (%v)", body, canon, again, ok)
		}
		if fingerprint(body, nil) != fingerprint(canon, nil) {
			t.Fatalf("body %q and its canonical form %q fingerprint differently", body, canon)
		}
	})
}

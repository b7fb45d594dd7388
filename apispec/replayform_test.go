package apispec_test

import (
	"bytes"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
)

// TestReplayForm: two bodies are the same replay under a replay_compare
// mode exactly when their forms are equal; the load checker hashes these.
func TestReplayForm(t *testing.T) {
	doc := `{"id":"ch_1","amount":1000,"tags":["a","b"]}`
	respelt := "{\n  \"tags\" : [\"a\", \"b\"],\n  \"amount\" : 1000 , \"id\" : \"ch_1\"\n}\n"
	for _, tc := range []struct {
		name, mode, a, b string
		same             bool
	}{
		{"json, re-serialised", apispec.CompareJSON, doc, respelt, true},
		{"json, another id", apispec.CompareJSON, doc, `{"id":"ch_2","amount":1000,"tags":["a","b"]}`, false},
		{"json, array order counts", apispec.CompareJSON, doc, `{"id":"ch_1","amount":1000,"tags":["b","a"]}`, false},
		{"json, a string is not a number", apispec.CompareJSON, `{"n":1}`, `{"n":"1"}`, false},
		{"json, not JSON: bytes", apispec.CompareJSON, "plain text", "plain text", true},
		{"json, JSON vs not", apispec.CompareJSON, `{"a":1}`, `{"a":1}x`, false},
		{"bytes, re-serialised", apispec.CompareBytes, doc, respelt, false},
		{"bytes, identical", apispec.CompareBytes, doc, doc, true},
		{"status, any bodies", apispec.CompareStatus, doc, "other", true},
	} {
		got := bytes.Equal(apispec.ReplayForm(tc.mode, []byte(tc.a)), apispec.ReplayForm(tc.mode, []byte(tc.b)))
		if got != tc.same {
			t.Errorf("%s: same = %v, want %v (forms %q, %q)", tc.name, got, tc.same,
				apispec.ReplayForm(tc.mode, []byte(tc.a)), apispec.ReplayForm(tc.mode, []byte(tc.b)))
		}
	}
}

package target_test

import (
	"bytes"
	"testing"

	"github.com/idemcheck/idemcheck/target"
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
		{"json, re-serialised", target.CompareJSON, doc, respelt, true},
		{"json, another id", target.CompareJSON, doc, `{"id":"ch_2","amount":1000,"tags":["a","b"]}`, false},
		{"json, array order counts", target.CompareJSON, doc, `{"id":"ch_1","amount":1000,"tags":["b","a"]}`, false},
		{"json, a string is not a number", target.CompareJSON, `{"n":1}`, `{"n":"1"}`, false},
		{"json, not JSON: bytes", target.CompareJSON, "plain text", "plain text", true},
		{"json, JSON vs not", target.CompareJSON, `{"a":1}`, `{"a":1}x`, false},
		{"bytes, re-serialised", target.CompareBytes, doc, respelt, false},
		{"bytes, identical", target.CompareBytes, doc, doc, true},
		{"status, any bodies", target.CompareStatus, doc, "other", true},
	} {
		got := bytes.Equal(target.ReplayForm(tc.mode, []byte(tc.a)), target.ReplayForm(tc.mode, []byte(tc.b)))
		if got != tc.same {
			t.Errorf("%s: same = %v, want %v (forms %q, %q)", tc.name, got, tc.same,
				target.ReplayForm(tc.mode, []byte(tc.a)), target.ReplayForm(tc.mode, []byte(tc.b)))
		}
	}
}

package apispec

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDerivedMutation: the first number (plus one) outside arrays, else
// the first boolean (negated), as a merge patch reaching it; nothing when
// mutations are configured or the body has neither.
func TestDerivedMutation(t *testing.T) {
	for _, tc := range []struct {
		body, name, patch string
		mutations         bool
	}{
		{`{"amount":100,"currency":"EUR"}`, "derived: /amount 100 → 101", `{"amount":101}`, false},
		{`{"currency":"EUR","order":{"items":[1,2],"quantity":3}}`, "derived: /order/quantity 3 → 4", `{"order":{"quantity":4}}`, false},
		{`{"items":[1,2],"gift":true}`, "derived: /gift true → false", `{"gift":false}`, false},
		{`{"price":9.5}`, "derived: /price 9.5 → 10.5", `{"price":10.5}`, false},
		{`{"a/b~c":1}`, "derived: /a~1b~0c 1 → 2", `{"a/b~c":2}`, false},
		{`{"note":"x","tags":[1]}`, "", "", false},
		{`{"amount":100}`, "", "", true},
		{``, "", "", false},
	} {
		op := &Operation{Body: json.RawMessage(tc.body)}
		if tc.mutations {
			op.Mutations = []Mutation{{Name: "changed", Patch: json.RawMessage(`{"amount":1}`)}}
		}
		m, ok := DerivedMutation(op)
		if ok != (tc.name != "") || m.Name != tc.name || string(m.Patch) != tc.patch {
			t.Errorf("%s: got %q %s %v, want %q %s", tc.body, m.Name, m.Patch, ok, tc.name, tc.patch)
		}
	}
}

// TestDerivedNoteWords: list's note names what the mismatch cases change,
// a body over HTTP and the request message over gRPC.
func TestDerivedNoteWords(t *testing.T) {
	for _, tc := range []struct{ name, cfg, want string }{
		{"http", "base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\noperations: [{name: pay, method: POST, path: /p, body: {amount: 1}}]\n",
			"operations[0] pay declares no body mutation: the mismatch cases send a mutation derived from its body (/amount 1 → 2)"},
		{"grpc", "base_url: grpc://127.0.0.1:1\nkey: {field: request_id}\nprincipals: [{name: a}]\noperations: [{name: pay, rpc: acme.v1.Payments/Create, body: {amount: 1}}]\nprofile: {preset: aip-155}\n",
			"operations[0] pay declares no message mutation: the mismatch cases send a mutation derived from its message (/amount 1 → 2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, _, err := ParseConfig([]byte(tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			if got := DerivedNote(tg); len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
				t.Errorf("rule: the note names what changes; got %q, want it to start %q", got, tc.want)
			}
		})
	}
}

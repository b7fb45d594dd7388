package target

import (
	"encoding/json"
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

package scenarios

import "testing"

// TestJSONEqualNumbers: replay_compare json compares numbers by value, so
// a replay re-serialised from a stored document (1.0 for 1, 1e2 for 100)
// is equal (it warned: jsonEqual compared the spellings); other values
// and big integers stay exact.
func TestJSONEqualNumbers(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{`{"amount":1000,"rate":1}`, `{"rate":1.0,"amount":1000}`, true},
		{`{"amount":100}`, `{"amount":1e2}`, true},
		{`{"amount":0.5}`, `{"amount":5E-1}`, true},
		{`[1, {"x": -0}]`, `[1.00, {"x": 0}]`, true},
		{`{"amount":1000}`, `{"amount":1001}`, false},
		{`{"id":9007199254740993}`, `{"id":9007199254740992}`, false}, // beyond float64: still told apart
		{`{"amount":1}`, `{"amount":"1"}`, false},
		{`{"a":1e999999999}`, `{"a":1e999999999}`, true},
		{`{"a":1e999999999}`, `{"a":10e999999998}`, false}, // not evaluated: compared as written
		{`{"a":0.1}`, `{"a":1e-1}`, true},
		{`{"a":0.10}`, `{"a":0.1}`, true},
		{`{"a":123.456e1}`, `{"a":1234.56}`, true},
		{`{"a":1e-20}`, `{"a":0.00000000000000000001}`, true},
		{`{"a":0.1}`, `{"a":0.10000000000000001}`, false}, // equal as float64, not as numbers
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
		{`not json`, `not json`, true},
	} {
		if got := jsonEqual([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("jsonEqual(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

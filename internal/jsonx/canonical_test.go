package jsonx

import "testing"

// TestCanonicalJSON: one spelling per document, so a hash of it compares
// replays the way jsonEqual does (the load checker hashes replays).
func TestCanonicalJSON(t *testing.T) {
	got, err := Canonical([]byte(`{ "b": 1.50, "a": 2E1, "c": [-0, 0.25e2, "x"] }`))
	if want := `{"a":20,"b":1.5,"c":[0,25,"x"]}`; err != nil || string(got) != want {
		t.Errorf("Canonical = %s, %v; want %s", got, err, want)
	}
}

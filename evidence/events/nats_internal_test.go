package events

import "testing"

// Two subject patterns overlap when one subject can match both.
func TestSubjectsOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"orders.>", "orders.created", true},
		{"orders.>", "orders", false}, // '>' needs one token at least
		{"orders.*", "orders.created", true},
		{"orders.*", "orders.created.eu", false},
		{"orders.*.eu", "orders.created.>", true},
		{"orders", "orders", true},
		{"orders", "payments", false},
		{"*.created", "orders.*", true},
		{">", "anything.at.all", true},
	} {
		if got := subjectsOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("subjectsOverlap(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := subjectsOverlap(tc.b, tc.a); got != tc.want {
			t.Errorf("subjectsOverlap(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

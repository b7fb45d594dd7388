package scenarios

import (
	"net/http"
	"testing"
)

// TestCookieLinesKept: fidelity/created-headers asks every original
// Set-Cookie line back as a line of its own, in any order, fresh values
// and added cookies allowed.
func TestCookieLinesKept(t *testing.T) {
	orig := http.Header{"Set-Cookie": {"a=1; Path=/", "b=2; Path=/"}}
	for _, tc := range []struct {
		rule  string
		lines []string
		lost  int
	}{
		{"the same lines", []string{"a=1; Path=/", "b=2; Path=/"}, 0},
		{"reordered, fresh values", []string{"b=9", "a=8"}, 0},
		{"a cookie added", []string{"a=1", "b=2", "session=x"}, 0},
		{"folded into one line", []string{"a=1; Path=/, b=2; Path=/"}, 1},
		{"one dropped", []string{"a=1"}, 1},
		{"none", nil, 2},
	} {
		got := missingFrom(cookieNames(orig), cookieNames(http.Header{"Set-Cookie": tc.lines}))
		if len(got) != tc.lost {
			t.Errorf("%s: lost %v, want %d lost", tc.rule, got, tc.lost)
		}
	}
}

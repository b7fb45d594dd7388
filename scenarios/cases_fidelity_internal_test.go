package scenarios

import (
	"testing"
)

// TestCookieLinesWhole: fidelity/created-headers asks every Set-Cookie
// line a replay carries to be whole: never two cookies folded into one
// line, never a cookie split at its Expires comma. Fresh values, added
// cookies and cookies left out are the server's choice.
func TestCookieLinesWhole(t *testing.T) {
	orig := []string{"a=1; Path=/", "b=2; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT"}
	for _, tc := range []struct {
		rule   string
		lines  []string
		broken int
	}{
		{"the same lines", orig, 0},
		{"reordered, fresh values", []string{"b=9", "a=8"}, 0},
		{"a cookie added", []string{"a=1; Path=/", "session=x"}, 0},
		{"none replayed", nil, 0},
		{"one left out", []string{"a=1; Path=/"}, 0},
		{"folded into one line", []string{"a=1; Path=/, b=2; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT"}, 1},
		{"split at the Expires comma", []string{"a=1; Path=/", "b=2; Path=/; Expires=Wed", "21 Oct 2026 07:28:00 GMT"}, 2},
	} {
		if got := brokenCookieLines(orig, tc.lines); len(got) != tc.broken {
			t.Errorf("rule: %s: broken %q, want %d broken lines", tc.rule, got, tc.broken)
		}
	}
}

// TestFieldLines: header fields are compared as field lines; only a list
// field's members may be spread over lines differently (RFC 9110 §5.3).
func TestFieldLines(t *testing.T) {
	for _, tc := range []struct {
		rule      string
		name      string
		want, got []string
		same      bool
	}{
		{"identical lines", "Content-Disposition", []string{`inline; filename="a, b.json"`}, []string{`inline; filename="a, b.json"`}, true},
		{"a singleton split at its comma (fiber #4693)", "Content-Disposition", []string{`inline; filename="a, b.json"`}, []string{`inline; filename="a`, `b.json"`}, false},
		{"a list field split into members", "Link", []string{"<a>; rel=x, <b>; rel=y"}, []string{"<a>; rel=x", "<b>; rel=y"}, true},
		{"a list field's lines combined", "Vary", []string{"Accept", "Origin"}, []string{"Accept, Origin"}, true},
		{"a list field's member lost", "Link", []string{"<a>; rel=x", "<b>; rel=y"}, []string{"<a>; rel=x"}, false},
		{"an unknown field's lines combined", "X-Thing", []string{"a", "b"}, []string{"a, b"}, false},
	} {
		if got := sameFieldLines(tc.name, tc.want, tc.got); got != tc.same {
			t.Errorf("rule: %s: same = %v, want %v", tc.rule, got, tc.same)
		}
	}
}

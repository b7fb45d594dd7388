package reference

import "testing"

func TestCanonicalQuery(t *testing.T) {
	cases := []struct{ a, b string }{
		{"capture=true&amount=1", "amount=1&capture=true"}, // order of names
		{"a=%41", "a=A"},        // percent-encoding
		{"q=a+b", "q=a%20b"},    // + is a space
		{"a&b=1", "a=&b=1"},     // bare name = empty value
		{"a=1&&b=2", "b=2&a=1"}, // empty pieces
	}
	for _, c := range cases {
		if x, y := canonicalQuery(c.a), canonicalQuery(c.b); x != y {
			t.Errorf("%q -> %q, %q -> %q: one meaning, two forms", c.a, x, c.b, y)
		}
	}
	differ := []struct{ a, b string }{
		{"capture=true", "capture=false"},
		{"tag=a&tag=b", "tag=b&tag=a"}, // repeated names keep their order
		{"a=1", "a=1&a=1"},
		{"a=b%26c", "a=b&c"}, // an escaped & is data, not a separator
		{"a", ""},
	}
	for _, c := range differ {
		if x, y := canonicalQuery(c.a), canonicalQuery(c.b); x == y {
			t.Errorf("%q and %q share the form %q", c.a, c.b, x)
		}
	}
}

func TestEqualsJoined(t *testing.T) {
	body := []byte("0123")
	for _, req := range []string{"", "abcd"} {
		if !equalsJoined(withRequest(string(body), req), body, req) {
			t.Errorf("request %q: joined form not recognised", req)
		}
	}
	if equalsJoined("0123", body, "abcd") || equalsJoined("0123;abcd", body, "") || equalsJoined("0123;abce", body, "abcd") {
		t.Error("a body-only hash matched a joined one, or a different request hash matched")
	}
}

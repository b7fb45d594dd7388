package apispec

import (
	"fmt"
	"regexp"
	"testing"
)

// TestShape: a key that does not obey key_format is reshaped into the
// first obeying form, derived from the key alone: the same key always
// gives the same shaped key (hashed business ids stay reproducible) and
// distinct keys stay distinct; a key that obeys already is kept.
func TestShape(t *testing.T) {
	cases := []struct {
		format, why string
	}{
		{"uuid", "UUID-only APIs: hex hashes and sequence keys become version-4 shaped UUIDs"},
		{"[0-9A-F]{32}", "a regular expression the upper-case hex form obeys"},
		{"idemcheck_[0-9a-f]{32}", "a prefixed form"},
		{"[0-9a-f]{64}", "the longest form, made of both halves of the hash"},
	}
	inputs := []string{HashKeys("orders")(1), HashKeys("orders")(2), RandomKeys()(7), "ik-0-1"}
	for _, tc := range cases {
		p := &Profile{KeyFormat: tc.format}
		re, err := p.keyMatcher()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, in := range inputs {
			k := p.Shape(in)
			switch {
			case !re.MatchString(k):
				t.Errorf("%s: Shape(%q) = %q does not obey it (%s)", tc.format, in, k, tc.why)
			case p.Shape(in) != k:
				t.Errorf("%s: Shape(%q) is not stable", tc.format, in)
			case p.Shape(k) != k:
				t.Errorf("%s: a key that obeys (%q) was reshaped", tc.format, k)
			case seen[k] != "":
				t.Errorf("%s: %q and %q both became %q", tc.format, seen[k], in, k)
			}
			seen[k] = in
		}
	}
	if uuidRe.MatchString(HashKeys("orders")(1)) {
		t.Fatal("the premise: a --hash-keys key is not a UUID")
	}
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if k := (&Profile{KeyFormat: "uuid"}).Shape("ik-0-1"); !v4.MatchString(k) {
		t.Errorf("Shape to uuid = %q, want a version-4 shaped UUID (APIs that check the version accept it)", k)
	}
	none := &Profile{}
	if k := none.Shape("ik-0-1"); k != "ik-0-1" {
		t.Errorf("no key_format: Shape changed %q to %q", "ik-0-1", k)
	}
	gen := none.ShapedKeys(func(n uint64) string { return fmt.Sprint("k", n) })
	if gen(3) != "k3" {
		t.Errorf("no key_format: ShapedKeys changed the generator (%q)", gen(3))
	}
}

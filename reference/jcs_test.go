package reference

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// TestCanonicalRFC8785 checks canonicalJSON against the figures of RFC 8785:
// its serialization example (3.2.4), its property-sorting example (3.2.3)
// and its number table (Appendix B), each input spelled differently from
// the expected output.
func TestCanonicalRFC8785(t *testing.T) {
	for _, tc := range []struct {
		name, why, in, want string
	}{
		{"serialization-example", "RFC 8785 3.2.4, except its first number: 333333333.33333329 has more digits than a double holds and keeps them (see number-beyond-double)",
			`{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
			  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
			  "literals": [null, true, false]}`,
			`{"literals":[null,true,false],"numbers":[333333333.33333329,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		{"serialization-example-double", "RFC 8785 3.2.4 with the double's shortest spelling of its first number: the RFC's output exactly",
			`{"numbers": [333333333.3333333, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "literals": [null, true, false]}`,
			`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27]}`},
		{"sorting-example", "RFC 8785 3.2.3: members sort by UTF-16 code units, so U+1F600 (D83D DE00) precedes U+FB33",
			`{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One",
			  "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\"," +
				"\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"nested", "sorting applies at every depth, arrays keep their order", `[{"b":[3,1],"a":{"z":0,"y":-0}}]`, `[{"a":{"y":0,"z":0},"b":[3,1]}]`},
		{"controls", "short escapes for the five, lowercase \\u00xx for other controls; U+2028, <, > and & stay literal",
			`["\u0008\u0009\u000A\u000C\u000D\u0001\u001F", "\u2028<>&\u007f"]`, "[\"\\b\\t\\n\\f\\r\\u0001\\u001f\",\"\u2028<>&\u007f\"]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := canonicalJSON([]byte(tc.in), nil)
			if !ok || string(got) != tc.want {
				t.Fatalf("%s:\n got %s (ok=%v)\nwant %s", tc.why, got, ok, tc.want)
			}
		})
	}
}

// TestCanonicalNumbersAppendixB: every finite double of RFC 8785 Appendix B,
// given in Go's exponent spelling (1.7976931348623157e+308, -0e+00), comes
// out as the RFC's ECMAScript spelling.
func TestCanonicalNumbersAppendixB(t *testing.T) {
	for _, tc := range []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"}, // minus zero
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	} {
		in := strconv.FormatFloat(math.Float64frombits(tc.bits), 'e', -1, 64)
		got, ok := canonicalJSON([]byte("["+in+"]"), nil)
		if !ok || string(got) != "["+tc.want+"]" {
			t.Errorf("%016x (%s): got %s (ok=%v), want [%s]", tc.bits, in, got, ok, tc.want)
		}
	}
}

// TestFingerprintValues: spellings of one value share a fingerprint, and
// different values never do, even where a double cannot tell them apart.
func TestFingerprintValues(t *testing.T) {
	for _, tc := range []struct {
		name, why string
		a, b      string
		ignore    []string
		same      bool
	}{
		{"int-vs-fraction", "1.0 is the value 1", `{"a":1}`, `{"a":1.0}`, nil, true},
		{"exponent", "1e2, 1E+2, 100.00 and 0.1e3 are all 100", `[100,100,100,100]`, `[1e2,1E+2,100.00,0.1e3]`, nil, true},
		{"minus-zero", "RFC 8785 writes -0 as 0", `[0]`, `[-0.0]`, nil, true},
		{"negative-exponent", "15e-1 is 1.5", `[1.5]`, `[15e-1]`, nil, true},
		{"string-escapes", "an escape and the literal character are one string", `{"s":"A/é😀"}`, `{"s":"\u0041\/\u00E9\ud83d\ude00"}`, nil, true},
		{"member-order", "member order and whitespace are not part of the value", `{"a":1,"b":[1,2]}`, " { \"b\" : [ 1 , 2 ] ,\n\"a\":1 } ", nil, true},
		{"ignored-member", "an ignored top-level member is left out, the rest still canonical", `{"a":1,"sent_at":"10:00"}`, `{"a":1.0,"sent_at":"10:01"}`, []string{"sent_at"}, true},
		{"ignored-nested", "only top-level members are ignored", `{"a":{"sent_at":1}}`, `{"a":{"sent_at":2}}`, []string{"sent_at"}, false},
		{"next-double", "1.0000000000000002 is the next double after 1", `[1]`, `[1.0000000000000002]`, nil, false},
		{"beyond-double-int", "both round to the double 12345678901234567168; the exact digits keep them apart", `[12345678901234567890]`, `[12345678901234567891]`, nil, false},
		{"beyond-double-2^53", "9007199254740993 rounds to 2^53 as a double", `[9007199254740992]`, `[9007199254740993]`, nil, false},
		{"beyond-double-fraction", "0.10000000000000001 rounds to the double of 0.1", `[0.1]`, `[0.10000000000000001]`, nil, false},
		{"beyond-double-range", "1e400 and 2e400 are both +Inf as doubles", `[1e400]`, `[2e400]`, nil, false},
		{"number-vs-string", "a number and its digits as a string differ", `[1]`, `["1"]`, nil, false},
		{"lone-surrogate", "encoding/json decodes a lone surrogate to U+FFFD; the body is hashed raw instead", `["\ud800"]`, `["\ufffd"]`, nil, false},
		{"invalid-utf8", "encoding/json decodes an invalid byte to U+FFFD; the body is hashed raw instead", "[\"\xff\"]", `["\ufffd"]`, nil, false},
		{"lone-after-backslash", `an escaped backslash, then a lone surrogate escape`, `["\\\ud800"]`, `["\\\ufffd"]`, nil, false},
		{"absurd-exponent", "an exponent past 2^40 is hashed raw, not expanded", `[1e1099511627777]`, `[1e1099511627778]`, nil, false},
		{"escaped-backslash-u", `"\\ud800" is a backslash and text, not a surrogate: still canonical`, `["\\ud800"]`, `[ "\\ud800" ]`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ignore := map[string]bool{}
			for _, n := range tc.ignore {
				ignore[n] = true
			}
			fa, fb := fingerprint([]byte(tc.a), ignore), fingerprint([]byte(tc.b), ignore)
			if (fa == fb) != tc.same {
				t.Fatalf("%s: same fingerprint = %v, want %v (%s vs %s)", tc.why, fa == fb, tc.same, tc.a, tc.b)
			}
		})
	}
}

// TestCanonicalMatchesJCSLibrary cross-checks canonicalJSON against
// github.com/gowebpki/jcs, a port of RFC 8785's reference implementation,
// on random documents whose numbers are doubles in their shortest
// spelling (where the exact-digits rule and RFC 8785 agree by design).
// Seeded and bounded: 2,000 documents.
func TestCanonicalMatchesJCSLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(8785, 1))
	// Runes from every range where UTF-8 and UTF-16 order or escaping differ.
	alphabet := []rune{'a', 'b', 'Z', '0', '"', '\\', '/', '\n', '\x01', '\x1f', 0x7f, 0x80, 0xe9, 0x2028, 0xe000, 0xfb33, 0xffee, 0x1f600, 0x10000, 0x10ffff}
	randString := func() string {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		// encoding/json spells <, >, &, U+2028 and controls as \u escapes.
		q, err := json.Marshal(b.String())
		if err != nil {
			t.Fatal(err)
		}
		return string(q)
	}
	randNumber := func() string {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = float64(rng.IntN(1 << 20))
		}
		switch rng.IntN(4) {
		case 0:
			f = float64(rng.Int64N(1<<53)) / math.Pow10(rng.IntN(8))
		case 1:
			f = math.Trunc(f / math.Pow10(rng.IntN(300)))
		}
		fmtByte := []byte{'e', 'E', 'g', 'f'}[rng.IntN(4)]
		if fmtByte == 'f' && math.Abs(f) > 1e30 {
			fmtByte = 'g'
		}
		return strconv.FormatFloat(f, fmtByte, -1, 64)
	}
	var value func(depth int) string
	value = func(depth int) string {
		switch n := rng.IntN(7); {
		case n == 0 && depth < 3:
			var parts []string
			seen := map[string]bool{} // RFC 8785 leaves duplicate names undefined
			for range rng.IntN(5) {
				if name := randString(); !seen[name] {
					seen[name] = true
					parts = append(parts, name+":"+value(depth+1))
				}
			}
			return "{" + strings.Join(parts, ",") + "}"
		case n == 1 && depth < 3:
			var parts []string
			for range rng.IntN(5) {
				parts = append(parts, value(depth+1))
			}
			return "[" + strings.Join(parts, ", ") + "]"
		case n == 2:
			return randString()
		case n == 3:
			return []string{"null", "true", "false"}[rng.IntN(3)]
		default:
			return randNumber()
		}
	}
	for i := range 2000 {
		doc := "[" + value(0) + "]"
		want, err := jcs.Transform([]byte(doc))
		if err != nil {
			t.Fatalf("doc %d: jcs: %v\n%s", i, err, doc)
		}
		got, ok := canonicalJSON([]byte(doc), nil)
		if !ok || string(got) != string(want) {
			t.Fatalf("doc %d: %s\n got %s (ok=%v)\njcs %s", i, doc, got, ok, want)
		}
	}
}

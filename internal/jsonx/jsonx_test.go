package jsonx

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestMergePatch runs RFC 7386 Appendix A's examples plus the cases the
// engine relies on (variant patches on a body, an absent body).
func TestMergePatch(t *testing.T) {
	for _, c := range []struct {
		name, doc, patch, want string
	}{
		{"replace a member", `{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{"add a member", `{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{"null deletes", `{"a":"b"}`, `{"a":null}`, `{}`},
		{"null deletes only its member", `{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{"arrays are replaced whole", `{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{"a value replaces an array", `{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{"nested objects merge", `{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{"array of objects replaced", `{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{"non-object patch replaces the document", `["a","b"]`, `["c","d"]`, `["c","d"]`},
		{"object patch on an array", `["a"]`, `{"a":"b"}`, `{"a":"b"}`},
		{"null in the target stays", `{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{"array patch on an object", `{"a":"foo"}`, `["bar"]`, `["bar"]`},
		{"null patch", `{"a":"foo"}`, `null`, `null`},
		{"deep null creates nothing", `{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		{"variant patch mixes delete, change and add", `{"a":1,"b":{"c":2,"d":3}}`, `{"a":null,"b":{"c":5},"e":[1]}`, `{"b":{"c":5,"d":3},"e":[1]}`},
		{"empty body is an absent target", ``, `{"a":1}`, `{"a":1}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := MergePatch([]byte(c.doc), []byte(c.patch))
			if err != nil {
				t.Fatalf("MergePatch(%s, %s): %v", c.doc, c.patch, err)
			}
			if !sameJSON(t, got, []byte(c.want)) {
				t.Errorf("MergePatch(%s, %s) = %s, want %s", c.doc, c.patch, got, c.want)
			}
		})
	}
}

// TestMergePatchErrors: a body or patch that is not JSON names which one.
func TestMergePatchErrors(t *testing.T) {
	for _, c := range []struct{ name, doc, patch, want string }{
		{"body not JSON", `{"a":`, `{}`, "body is not JSON"},
		{"patch not JSON", `{}`, `{a}`, "patch is not JSON"},
		{"patch empty", `{}`, ``, "patch is not JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := MergePatch([]byte(c.doc), []byte(c.patch)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("MergePatch(%q, %q) error = %v, want %q", c.doc, c.patch, err, c.want)
			}
		})
	}
}

// TestPointer runs RFC 6901 §5's examples and the misses a lookup must
// report rather than guess.
func TestPointer(t *testing.T) {
	const rfc = `{"foo":["bar","baz"],"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8,"x":{"a/b":{"m~n":[10,20]}}}`
	var doc any
	if err := json.Unmarshal([]byte(rfc), &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, ptr string
		want      any // nil: no value expected
	}{
		{"whole document", "", doc},
		{"member", "/foo", []any{"bar", "baz"}},
		{"array index", "/foo/0", "bar"},
		{"empty member name", "/", 0.0},
		{"~1 is a slash", "/a~1b", 1.0},
		{"percent is literal", "/c%d", 2.0},
		{"caret", "/e^f", 3.0},
		{"pipe", "/g|h", 4.0},
		{"backslash", "/i\\j", 5.0},
		{"quote", "/k\"l", 6.0},
		{"space", "/ ", 7.0},
		{"~0 is a tilde", "/m~0n", 8.0},
		{"escapes in nested tokens", "/x/a~1b/m~0n/1", 20.0},
		{"missing member", "/nope", nil},
		{"index past the end", "/foo/2", nil},
		{"negative index", "/foo/-1", nil},
		{"non-numeric index", "/foo/x", nil},
		{"through a scalar", "/a~1b/c", nil},
		{"no leading slash", "foo", nil},
		{"bad escape", "/m~2n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Pointer(doc, c.ptr)
			if c.want == nil {
				if ok {
					t.Errorf("Pointer(%q) = %v, want no value", c.ptr, got)
				}
				return
			}
			if !ok || !reflect.DeepEqual(got, c.want) {
				t.Errorf("Pointer(%q) = %v, %v; want %v", c.ptr, got, ok, c.want)
			}
		})
	}
}

// TestParsePointer: tokens come back unescaped, ~1 before ~0, and invalid
// syntax is refused (configs are validated with it).
func TestParsePointer(t *testing.T) {
	for _, c := range []struct {
		ptr  string
		want []string
		bad  bool
	}{
		{ptr: "", want: nil},
		{ptr: "/", want: []string{""}},
		{ptr: "/a/b", want: []string{"a", "b"}},
		{ptr: "/~01", want: []string{"~1"}},
		{ptr: "/a~1b/m~0n", want: []string{"a/b", "m~n"}},
		{ptr: "a", bad: true},
		{ptr: "/a~", bad: true},
		{ptr: "/~2", bad: true},
	} {
		got, err := ParsePointer(c.ptr)
		if c.bad {
			if err == nil {
				t.Errorf("ParsePointer(%q) = %q, want an error", c.ptr, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParsePointer(%q) = %q, %v; want %q", c.ptr, got, err, c.want)
		}
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb) || bytes.Equal(a, b)
}

func TestReplace(t *testing.T) {
	for _, tc := range []struct {
		doc, ptr, value, want string
		ok                    bool
	}{
		{`{"b": 1, "ref": "", "a": [1]}`, "/ref", `"tok"`, `{"b": 1, "ref": "tok", "a": [1]}`, true},
		{`{"m":{"ref" :  null },"z":0}`, "/m/ref", `"tok"`, `{"m":{"ref" :  "tok" },"z":0}`, true},
		{`{"a":[{"r":1}, {"r":2}]}`, "/a/1/r", `"t"`, `{"a":[{"r":1}, {"r":"t"}]}`, true},
		{`{"a":[1,  2]}`, "/a/1", `3`, `{"a":[1,  3]}`, true},
		{`{"a":{"x":[1,{"y":2}]},"ref":"old"}`, "/ref", `"new"`, `{"a":{"x":[1,{"y":2}]},"ref":"new"}`, true},
		{`{"a/b":1,"c~d":2}`, "/a~1b", `0`, `{"a/b":0,"c~d":2}`, true},
		{`{"ref":""}`, "/nope", `"t"`, ``, false},
		{`{"a":[1]}`, "/a/3", `"t"`, ``, false},
		{`not json`, "/ref", `"t"`, ``, false},
		{`{"ref":""}`, "ref", `"t"`, ``, false},
	} {
		got, ok := Replace([]byte(tc.doc), tc.ptr, []byte(tc.value))
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("Replace(%s, %s) = %s %v, want %s %v", tc.doc, tc.ptr, got, ok, tc.want, tc.ok)
		}
	}
}

// TestPointerText: ids are read as text from objects and arrays; anything
// missing or not JSON is "".
func TestPointerText(t *testing.T) {
	body := []byte(`{"id":"ch_1","n":12345678901234567890,"items":[{"id":7}],"a/b":true}`)
	for _, c := range []struct{ ptr, want string }{
		{"/id", "ch_1"},
		{"/n", "12345678901234567890"},
		{"/items/0/id", "7"},
		{"/a~1b", "true"},
		{"/missing", ""},
		{"/items/1/id", ""},
	} {
		if got := PointerText(body, c.ptr); got != c.want {
			t.Errorf("PointerText(%q) = %q, want %q", c.ptr, got, c.want)
		}
	}
	if got := PointerText([]byte("not json"), "/id"); got != "" {
		t.Errorf("PointerText(not JSON) = %q, want empty", got)
	}
}

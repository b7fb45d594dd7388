package initconfig

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
)

// maxDepth bounds the walk of recursive schemas.
const maxDepth = 8

// flat is a schema with its allOf merged in: the members and required
// names every branch adds.
type flat struct {
	s          *openapi3.Schema
	properties map[string]*openapi3.Schema
	required   []string
}

func flatten(s *openapi3.Schema) flat {
	f := flat{s: s, properties: map[string]*openapi3.Schema{}}
	var walk func(s *openapi3.Schema, depth int)
	walk = func(s *openapi3.Schema, depth int) {
		if s == nil || depth > maxDepth {
			return
		}
		for name, p := range s.Properties {
			if p != nil && p.Value != nil {
				f.properties[name] = p.Value
			}
		}
		f.required = append(f.required, s.Required...)
		for _, a := range s.AllOf {
			if a != nil {
				walk(a.Value, depth+1)
			}
		}
	}
	walk(s, 0)
	sort.Strings(f.required)
	f.required = compactStrings(f.required)
	return f
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// typeOf is the schema's one type: the first non-null one declared, else
// inferred from its keywords.
func typeOf(s *openapi3.Schema) string {
	if s.Type != nil {
		for _, t := range s.Type.Slice() {
			if t != openapi3.TypeNull {
				return t
			}
		}
	}
	switch {
	case len(s.Properties) > 0 || len(s.Required) > 0 || len(s.AllOf) > 0:
		return openapi3.TypeObject
	case s.Items != nil:
		return openapi3.TypeArray
	case s.Min != nil || s.Max != nil:
		return openapi3.TypeNumber
	}
	return openapi3.TypeString
}

// sample is a value valid against s built from its own examples and
// constraints: a const, the first enum member, an example, a default,
// else the smallest value of its type that meets minimums, formats and
// patterns; objects get their required members only.
func sample(s *openapi3.Schema, depth int) any {
	if s == nil || depth > maxDepth {
		return "idemcheck"
	}
	switch {
	case s.Const != nil:
		return s.Const
	case len(s.Enum) > 0 && s.Enum[0] != nil:
		return s.Enum[0]
	case s.Example != nil:
		return s.Example
	case len(s.Examples) > 0 && s.Examples[0] != nil:
		return s.Examples[0]
	case s.Default != nil:
		return s.Default
	}
	for _, alt := range [][]*openapi3.SchemaRef{s.OneOf, s.AnyOf} {
		if len(alt) > 0 && alt[0] != nil && alt[0].Value != nil {
			return sample(alt[0].Value, depth+1)
		}
	}
	switch typeOf(s) {
	case openapi3.TypeObject:
		f := flatten(s)
		obj := map[string]any{}
		for _, name := range f.required {
			if p := f.properties[name]; p == nil || !p.ReadOnly {
				obj[name] = sample(p, depth+1)
			}
		}
		return obj
	case openapi3.TypeArray:
		n := max(s.MinItems, 1)
		if s.MaxItems != nil && *s.MaxItems < n {
			n = *s.MaxItems
		}
		n = max(n, uint64(len(s.PrefixItems)))
		items := make([]any, n)
		for i := range items {
			var is *openapi3.Schema
			switch {
			case i < len(s.PrefixItems) && s.PrefixItems[i] != nil:
				is = s.PrefixItems[i].Value
			case s.Items != nil:
				is = s.Items.Value
			}
			items[i] = sample(is, depth+1)
		}
		return items
	case openapi3.TypeInteger:
		return int64(number(s, true))
	case openapi3.TypeNumber:
		return number(s, false)
	case openapi3.TypeBoolean:
		return false
	}
	return sampleString(s)
}

// number is the smallest number s allows from 1 up (or its maximum).
func number(s *openapi3.Schema, integer bool) float64 {
	n := 1.0
	if s.Min != nil {
		n = *s.Min
		if s.ExclusiveMin.IsTrue() {
			n++
		}
	}
	if v := s.ExclusiveMin.Value; v != nil && *v >= n {
		n = *v + 1
	}
	if integer {
		n = math.Ceil(n)
	}
	if m := s.MultipleOf; m != nil && *m > 0 {
		n = math.Ceil(n / *m) * *m
	}
	if s.Max != nil && n > *s.Max {
		n = *s.Max
	}
	return n
}

// formats holds a valid sample per well-known string format.
var formats = map[string]string{
	"date-time": "2026-01-01T00:00:00Z",
	"date":      "2026-01-01",
	"time":      "12:00:00Z",
	"email":     "idemcheck@example.com",
	"uuid":      "3fa85f64-5717-4562-b3fc-2c963f66afa6",
	"uri":       "https://example.com/idemcheck",
	"url":       "https://example.com/idemcheck",
	"hostname":  "example.com",
	"ipv4":      "192.0.2.1",
	"ipv6":      "2001:db8::1",
	"byte":      "aWRlbWNoZWNr",
	"duration":  "PT1M",
}

func sampleString(s *openapi3.Schema) string {
	v, ok := formats[s.Format]
	if !ok {
		v = "idemcheck"
	}
	if s.Pattern != "" {
		if re, err := regexp.Compile(s.Pattern); err == nil && !re.MatchString(v) {
			if g, ok := fromPattern(s.Pattern); ok {
				v = g
			}
		}
	}
	for uint64(len(v)) < s.MinLength {
		v += "x"
	}
	if s.MaxLength != nil && uint64(len(v)) > *s.MaxLength {
		v = v[:*s.MaxLength]
	}
	return v
}

// fromPattern builds the shortest string a regular expression matches,
// preferring letters and digits.
func fromPattern(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	ok := true
	var walk func(r *syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpLiteral:
			b.WriteString(string(r.Rune))
		case syntax.OpCharClass:
			b.WriteRune(classRune(r.Rune))
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			b.WriteByte('a')
		case syntax.OpCapture:
			walk(r.Sub[0])
		case syntax.OpConcat:
			for _, s := range r.Sub {
				walk(s)
			}
		case syntax.OpAlternate:
			walk(r.Sub[0])
		case syntax.OpPlus:
			walk(r.Sub[0])
		case syntax.OpRepeat:
			for range r.Min {
				walk(r.Sub[0])
			}
		case syntax.OpStar, syntax.OpQuest, syntax.OpEmptyMatch,
			syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
			syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		default:
			ok = false
		}
	}
	walk(re)
	return b.String(), ok
}

// classRune picks a letter or digit in a character class (pairs of
// ranges), else its first rune.
func classRune(ranges []rune) rune {
	for _, want := range []func(rune) bool{unicode.IsLower, unicode.IsUpper, unicode.IsDigit} {
		for i := 0; i+1 < len(ranges); i += 2 {
			for r := ranges[i]; r <= ranges[i+1] && r < ranges[i]+128; r++ {
				if want(r) && r < 128 {
					return r
				}
			}
		}
	}
	if len(ranges) > 0 {
		return ranges[0]
	}
	return 'a'
}

// validate checks v against s the way the document's version reads its
// schemas, as a request body (readOnly members refused).
func validate(doc *openapi3.T, s *openapi3.Schema, v any) error {
	jv, err := jsonValue(v)
	if err != nil {
		return err
	}
	opts := []openapi3.SchemaValidationOption{openapi3.VisitAsRequest(), openapi3.MultiErrors()}
	if doc.IsOpenAPI31OrLater() {
		// JSON Schema 2020-12, as 3.1 reads its schemas (const,
		// prefixItems, numeric exclusive bounds, type arrays).
		opts = append(opts, openapi3.EnableJSONSchema2020())
		s = requestView(s, 0)
	}
	if err := doc.ValidateSchemaJSON(s, jv, opts...); err != nil {
		return fmt.Errorf("%s", oneLine(err.Error()))
	}
	return nil
}

// requestView is s as a request sees it: readOnly members are not
// required (OpenAPI's rule, which the JSON Schema 2020-12 validator does
// not apply). Copies only what it changes.
func requestView(s *openapi3.Schema, depth int) *openapi3.Schema {
	if s == nil || depth > maxDepth {
		return s
	}
	c := *s
	c.Required = nil
	for _, name := range s.Required {
		if p := s.Properties[name]; p == nil || p.Value == nil || !p.Value.ReadOnly {
			c.Required = append(c.Required, name)
		}
	}
	if len(s.Properties) > 0 {
		c.Properties = openapi3.Schemas{}
		for name, p := range s.Properties {
			if p != nil && p.Value != nil {
				c.Properties[name] = &openapi3.SchemaRef{Value: requestView(p.Value, depth+1)}
			}
		}
	}
	for _, list := range []*openapi3.SchemaRefs{&c.AllOf, &c.OneOf, &c.AnyOf} {
		if len(*list) == 0 {
			continue
		}
		out := make(openapi3.SchemaRefs, len(*list))
		for i, r := range *list {
			if r != nil && r.Value != nil {
				out[i] = &openapi3.SchemaRef{Value: requestView(r.Value, depth+1)}
			} else {
				out[i] = r
			}
		}
		*list = out
	}
	if s.Items != nil && s.Items.Value != nil {
		c.Items = &openapi3.SchemaRef{Value: requestView(s.Items.Value, depth+1)}
	}
	return &c
}

// jsonValue is v as encoding/json decodes it (numbers as float64).
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

// changed returns a different value for a member, valid against its
// schema when possible: the next enum member, a number one step away, a
// flipped boolean, another string of the same shape.
func changed(s *openapi3.Schema, v any) (any, bool) {
	if s != nil && len(s.Enum) > 1 {
		for _, e := range s.Enum {
			if e != nil && fmt.Sprint(e) != fmt.Sprint(v) {
				return e, true
			}
		}
	}
	switch x := v.(type) {
	case bool:
		return !x, true
	case float64, int, int64:
		f, _ := toFloat(x)
		step := 1.0
		if s != nil && s.MultipleOf != nil && *s.MultipleOf > 0 {
			step = *s.MultipleOf
		}
		n := f + step
		if s != nil && s.Max != nil && n > *s.Max {
			n = f - step
		}
		if n == math.Trunc(n) {
			return int64(n), true
		}
		return n, true
	case string:
		if s != nil {
			switch s.Format {
			case "date-time":
				return "2026-01-02T00:00:00Z", x != "2026-01-02T00:00:00Z"
			case "date":
				return "2026-01-02", x != "2026-01-02"
			case "uuid":
				return "c0ffee00-5717-4562-b3fc-2c963f66afa6", true
			case "email":
				return "idemcheck2@example.com", true
			}
		}
		return changedString(x), x != ""
	}
	return nil, false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// changedString changes the last letter or digit of s, keeping its
// length and character classes (a currency "usd" becomes "use").
func changedString(s string) string {
	r := []rune(s)
	for i := len(r) - 1; i >= 0; i-- {
		switch c := r[i]; {
		case c >= 'a' && c < 'z', c >= 'A' && c < 'Z', c >= '0' && c < '9':
			r[i] = c + 1
			return string(r)
		case c == 'z' || c == 'Z' || c == '9':
			r[i] = c - 1
			return string(r)
		}
	}
	return s + "2"
}

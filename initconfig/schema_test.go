package initconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/idemcheck/idemcheck/apispec"
)

// TestSampleValid: a body generated from a schema's required members is
// valid against that schema, in OpenAPI 3.0 and 3.1 alike, for the
// constraints request schemas use (the validation is kin-openapi's, the
// 3.1 one JSON Schema 2020-12).
func TestSampleValid(t *testing.T) {
	schemas := []string{
		`{"type":"object","required":["amount"],"properties":{"amount":{"type":"integer","minimum":100,"multipleOf":50}}}`,
		`{"type":"object","required":["price"],"properties":{"price":{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":0.5}}}`,
		`{"type":"object","required":["code"],"properties":{"code":{"type":"string","pattern":"^[A-Z]{2}-[0-9]{4}$"}}}`,
		`{"type":"object","required":["code"],"properties":{"code":{"type":"string","pattern":"^(EUR|USD)$"}}}`,
		`{"type":"object","required":["name"],"properties":{"name":{"type":"string","minLength":12,"maxLength":20}}}`,
		`{"type":"object","required":["when","who","site","id"],"properties":{"when":{"type":"string","format":"date-time"},"who":{"type":"string","format":"email"},"site":{"type":"string","format":"uri"},"id":{"type":"string","format":"uuid"}}}`,
		`{"type":"object","required":["kind"],"properties":{"kind":{"type":"string","enum":["a","b"]}}}`,
		`{"type":"object","required":["lines"],"properties":{"lines":{"type":"array","minItems":2,"items":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}}}}}}`,
		`{"allOf":[{"type":"object","required":["a"],"properties":{"a":{"type":"boolean"}}},{"type":"object","required":["b"],"properties":{"b":{"type":"integer","maximum":-5}}}]}`,
		`{"type":"object","required":["pay"],"properties":{"pay":{"oneOf":[{"type":"object","required":["card"],"properties":{"card":{"type":"string","minLength":16}}},{"type":"object","required":["iban"],"properties":{"iban":{"type":"string"}}}]}}}`,
		`{"type":"object","required":["id","name"],"properties":{"id":{"type":"string","readOnly":true},"name":{"type":"string"}}}`,
	}
	schemas31 := []string{
		`{"type":"object","required":["n","note"],"properties":{"n":{"type":"integer","exclusiveMinimum":10},"note":{"type":["null","string"],"minLength":2}}}`,
		`{"type":"object","required":["v"],"properties":{"v":{"const":"fixed"}}}`,
		`{"type":"object","required":["tags"],"properties":{"tags":{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"}}}}`,
	}
	check := func(version string, raw string) {
		t.Helper()
		doc := &openapi3.T{OpenAPI: version}
		var s openapi3.Schema
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(context.Background()); err != nil && version == "3.0.3" {
			t.Fatalf("the test's schema %s: %v", raw, err)
		}
		v := sample(&s, 0)
		if err := validate(doc, &s, v); err != nil {
			b, _ := json.Marshal(v)
			t.Errorf("OpenAPI %s: sample %s of %s: %v", version, b, raw, err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("sample of an object schema is %T", v)
		}
		if _, ok := obj["id"]; ok && s.Properties["id"] != nil && s.Properties["id"].Value.ReadOnly {
			t.Errorf("rule: readOnly members are not sent: %v", obj)
		}
	}
	for _, raw := range schemas {
		check("3.0.3", raw)
		check("3.1.0", raw)
	}
	for _, raw := range schemas31 {
		check("3.1.0", raw)
	}
}

// TestChangedValue: a mutation's value differs from the original and
// stays within the member's schema.
func TestChangedValue(t *testing.T) {
	max10 := 10.0
	for _, tc := range []struct {
		s    *openapi3.Schema
		v    any
		want any
	}{
		{&openapi3.Schema{Enum: []any{"usd", "eur"}}, "usd", "eur"},
		{&openapi3.Schema{Max: &max10}, float64(10), int64(9)},
		{nil, float64(7), int64(8)},
		{nil, true, false},
		{nil, "usd", "use"},
		{nil, "zz", "zy"},
		{&openapi3.Schema{Format: "date"}, "2026-01-01", "2026-01-02"},
	} {
		got, ok := changed(tc.s, tc.v)
		if !ok || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("changed(%v) = %v, %v; want %v", tc.v, got, ok, tc.want)
		}
	}
}

// TestIDMember: the created id is found by mark, then name, shallowest
// first; a generic *_id comes last, as a guess to confirm.
func TestIDMember(t *testing.T) {
	for _, tc := range []struct {
		schema, resource, ptr, why string
	}{
		{`{"properties":{"customer_id":{"type":"string"},"id":{"type":"string"}}}`, "orders", "/id", "named id"},
		{`{"properties":{"customer_id":{"type":"string"},"order_id":{"type":"string"}}}`, "orders", "/order_id", "own id"},
		{`{"properties":{"customer_id":{"type":"string"},"uuid":{"type":"string"}}}`, "orders", "/uuid", "uuid"},
		{`{"properties":{"customer_id":{"type":"string"}}}`, "orders", "/customer_id", "*_id"},
		{`{"properties":{"id":{"type":"string"},"ref":{"type":"string","x-idemcheck-id":true}}}`, "orders", "/ref", "x-idemcheck-id"},
		{`{"properties":{"data":{"type":"object","properties":{"id":{"type":"integer"}}}}}`, "orders", "/data/id", "named id"},
		{`{"properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"}}}}}}`, "orders", "", ""},
		{`{"allOf":[{"properties":{"a/b":{"type":"object","properties":{"id":{"type":"string"}}}}}]}`, "orders", "/a~1b/id", "named id"},
	} {
		var s openapi3.Schema
		if err := json.Unmarshal([]byte(tc.schema), &s); err != nil {
			t.Fatal(err)
		}
		ptr, why := idMember(&s, tc.resource)
		if ptr != tc.ptr || !strings.Contains(why, tc.why) {
			t.Errorf("%s: %q (%s), want %q (%s)", tc.schema, ptr, why, tc.ptr, tc.why)
		}
	}
}

// TestDurations: x-idempotency-ttl as a Go duration, seconds or ISO 8601;
// a duration in prose.
func TestDurations(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want time.Duration
	}{
		{"24h", 24 * time.Hour}, {float64(90), 90 * time.Second}, {"PT24H", 24 * time.Hour}, {"P1DT30M", 24*time.Hour + 30*time.Minute},
		{"kept for 7 days", 7 * 24 * time.Hour}, {"forever", 0}, {"P", 0}, {float64(-1), 0},
	} {
		d, ok := durationExt(map[string]any{"x-idempotency-ttl": tc.v})
		if d != tc.want || ok != (tc.want > 0) {
			t.Errorf("%v: %s %v, want %s", tc.v, d, ok, tc.want)
		}
	}
	if d, text, ok := durationIn("Keys are purged after 30 minutes."); !ok || d != 30*time.Minute || text != "30 minutes" {
		t.Errorf("prose: %s %q %v", d, text, ok)
	}
}

// TestKeySyntax: what the key parameter says of the key's form.
func TestKeySyntax(t *testing.T) {
	str := func(s string) *openapi3.SchemaRef {
		return &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Format: s}}
	}
	pattern := func(p string) *openapi3.SchemaRef {
		return &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Pattern: p}}
	}
	for _, tc := range []struct {
		p      *openapi3.Parameter
		syntax apispec.KeySyntax
		why    string
	}{
		{nil, apispec.SFString, "guessed: the draft's"},
		{&openapi3.Parameter{Name: "K", Example: `"abc"`}, apispec.SFString, "quoted"},
		{&openapi3.Parameter{Name: "K", Example: "abc"}, apispec.Raw, "guessed: "},
		{&openapi3.Parameter{Name: "K", Description: "A Structured Field string."}, apispec.SFString, "structured-field"},
		{&openapi3.Parameter{Name: "K", Description: "The key, sent as is."}, apispec.Raw, "sent as is"},
		{&openapi3.Parameter{Name: "K", Schema: str("uuid")}, apispec.SFString, "uuid format is the key's"},
		{&openapi3.Parameter{Name: "K", Schema: pattern("^[A-Za-z0-9-]{8,64}$")}, apispec.Raw, "refuses quotes"},
		{&openapi3.Parameter{Name: "K", Schema: pattern(`^"[a-z0-9-]+"$`)}, apispec.SFString, "wants quotes"},
		{&openapi3.Parameter{Name: "K", Schema: str("")}, apispec.SFString, "guessed: the draft's"},
	} {
		syntax, why := keySyntax(tc.p)
		if syntax != tc.syntax || !strings.Contains(why, tc.why) {
			t.Errorf("%+v: %s (%s), want %s (%s)", tc.p, syntax, why, tc.syntax, tc.why)
		}
	}
}

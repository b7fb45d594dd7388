package evidence

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence/double"
)

// TestMark: a key's token goes where the marker says, the body's other
// bytes unchanged; the double then counts the request's calls for the key.
func TestMark(t *testing.T) {
	base := &apispec.Target{Downstream: &double.Config{Routes: []double.Route{{Name: "payments", Path: "/**"}}}}
	d, err := StartDownstream(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	key := "0c6f7d2a-1b3c-4d5e-8f90-a1b2c3d4e5f6"
	tok := d.Token(key)
	if len(tok) != double.TokenLen || !strings.HasPrefix(tok, double.Prefix) || tok != d.Token(key) || tok == d.Token(key+"x") {
		t.Fatalf("token %q: want a stable, per-key token", tok)
	}
	body := []byte(`{"sku": "abc",  "reference": "", "n": 1}`)
	for _, tc := range []struct {
		marker          apispec.Marker
		url, body, head string
	}{
		{apispec.Marker{Pointer: "/reference"}, "http://api/v1/orders", `{"sku": "abc",  "reference": "` + tok + `", "n": 1}`, ""},
		{apispec.Marker{Pointer: "/meta/ref"}, "http://api/v1/orders", `{"meta":{"ref":"` + tok + `"},"n":1,"reference":"","sku":"abc"}`, ""},
		{apispec.Marker{Header: "X-Ref"}, "http://api/v1/orders", string(body), tok},
		{apispec.Marker{Query: "ref"}, "http://api/v1/orders?ref=" + tok, string(body), ""},
	} {
		op := &apispec.Operation{Marker: &tc.marker}
		h := http.Header{}
		u, b := d.Mark(op, key, "http://api/v1/orders", h, body)
		if u != tc.url || string(b) != tc.body || h.Get("X-Ref") != tc.head {
			t.Errorf("marker %s: %s %s %v", tc.marker.String(), u, b, h)
		}
	}
	// Without a double nothing changes.
	var none *Downstream
	if u, b := none.Mark(&apispec.Operation{Marker: &apispec.Marker{Header: "X-Ref"}}, key, "u", http.Header{}, body); u != "u" || string(b) != string(body) {
		t.Error("marked without a double")
	}
}

// TestEndVariant: after EndVariant the double answers a key's calls of
// the variant's route as the route does (the provider recovered), and
// counts them as before.
func TestEndVariant(t *testing.T) {
	// No marker: the API forwards the key itself, which the double counts.
	op := &apispec.Operation{Variants: map[string]apispec.Variant{apispec.VariantTransientError: {
		Downstream: &apispec.VariantDownstream{Route: "payments", Behaviour: double.Behaviour{Status: http.StatusServiceUnavailable}}}}}
	base := &apispec.Target{Operations: []apispec.Operation{*op}, Downstream: &double.Config{Routes: []double.Route{{Name: "payments", Path: "/**",
		Response: double.Response{Body: []byte(`{"id":"pay_{seq}"}`)}}}}}
	d, err := StartDownstream(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	key := "7e1d2c3b-4a59-4f68-9e7d-6c5b4a392817"
	call := func() int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, d.URL()+"/v1/payments", strings.NewReader(`{"reference":"`+key+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if err := d.BehaveVariant(op, key, apispec.VariantTransientError); err != nil {
		t.Fatal(err)
	}
	if got := call(); got != http.StatusServiceUnavailable {
		t.Fatalf("during the variant: %d, want 503", got)
	}
	if err := d.EndVariant(op, key, apispec.VariantTransientError); err != nil {
		t.Fatal(err)
	}
	if got := call(); got != http.StatusOK {
		t.Errorf("after EndVariant: %d, want the route's 200", got)
	}
	if n := d.Calls(key, "payments"); n != 2 {
		t.Errorf("%d calls counted for the key, want 2", n)
	}
	// Without a double, or for a variant the double does not play, nothing happens.
	var none *Downstream
	if err := none.EndVariant(op, key, apispec.VariantTransientError); err != nil {
		t.Error(err)
	}
	if err := d.EndVariant(op, key, apispec.VariantSlow); err != nil {
		t.Error(err)
	}
}

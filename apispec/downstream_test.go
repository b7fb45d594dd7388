package apispec

import (
	"strings"
	"testing"
	"time"
)

const downstreamBase = `base_url: http://127.0.0.1:1
principals: [{name: a, headers: {Authorization: Bearer a}}]
downstream:
  routes: [{name: payments, method: POST, path: /v1/payments}]
`

// TestDownstreamConfig: the config loads; every bad downstream
// field is one line naming it.
func TestDownstreamConfig(t *testing.T) {
	good := downstreamBase + `oracle: {downstream: payments}
operations:
  - name: orders
    method: POST
    path: /v1/orders
    body: {sku: abc, quantity: 1, card: "4242", reference: ""}
    marker: /reference
    id_pointer: /order_id
    variants:
      slow: {downstream: {route: payments, delay: 1500ms}, duration: 1500ms}
      business_error: {downstream: {route: payments, status: 402, body: {error: card_declined}}, status: 402}
      transient_error: {downstream: {route: payments, status: 503}, status: 502}
`
	tg, _, err := ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	op := tg.Operations[0]
	slow, decline := op.Variants[VariantSlow].Downstream, op.Variants[VariantBusinessError].Downstream
	if tg.Downstream == nil || tg.Oracle.Downstream != "payments" || op.Marker.Pointer != "/reference" ||
		slow.Route != "payments" || slow.Delay != 1500*time.Millisecond || decline.Status != 402 || string(decline.Body) != `{"error":"card_declined"}` {
		t.Fatalf("loaded %+v / %+v", tg, op)
	}
	if body, _, _ := op.VariantBody(VariantSlow); string(body) != string(op.Body) {
		t.Errorf("a downstream variant's body %s, want the operation's", body)
	}
	if !tg.Oracle.PerKey() || tg.OracleOf(&op) == nil {
		t.Error("a downstream oracle counts per key, for the operation")
	}
	hung, _, err := ParseConfig([]byte(downstreamBase + "operations: [{name: o, method: POST, path: /o, variants: {slow: {downstream: {route: payments, hang: true}, duration: 2s}}}]\n"))
	if err != nil || !hung.Operations[0].Variants[VariantSlow].Downstream.Hang {
		t.Errorf("a slow variant held by a hung provider: %v", err)
	}
	const op1 = "operations: [{name: o, method: POST, path: /o, body: {ref: \"\"}, marker: /ref}]\n"
	// The events source reads markers too: no double needed then.
	if _, _, err := ParseConfig([]byte("base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\n" + op1 +
		"events: {kafka: {brokers: [\"127.0.0.1:9092\"], topic: t}, key: {pointer: /data/ref}}\n")); err != nil {
		t.Errorf("a marker for the events source alone: %v", err)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown oracle route", downstreamBase + op1 + "oracle: {downstream: refunds}\n", `oracle.downstream "refunds": no such route in downstream.routes (payments)`},
		{"oracle without a double", "base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\noperations: [{name: o, method: POST, path: /o}]\noracle: {downstream: p}\n", `oracle.downstream "p": no downstream: section`},
		{"oracle of two kinds", downstreamBase + op1 + "oracle: {downstream: payments, url: /e}\n", `oracle.downstream "payments": an oracle is one source`},
		{"operation oracle route", downstreamBase + "operations: [{name: o, method: POST, path: /o, oracle: {downstream: nope}}]\n", `operations[0].oracle.downstream "nope"`},
		{"variant route", downstreamBase + "operations: [{name: o, method: POST, path: /o, variants: {slow: {downstream: {route: pay, delay: 2s}, duration: 2s}}}]\n", `operations[0].variants.slow.downstream.route "pay"`},
		{"variant status", downstreamBase + "operations: [{name: o, method: POST, path: /o, variants: {business_error: {downstream: {route: payments, status: 42}}}}]\n", `operations[0].variants.business_error.downstream.status 42`},
		{"slow delay shorter", downstreamBase + "operations: [{name: o, method: POST, path: /o, variants: {slow: {downstream: {route: payments, delay: 1s}, duration: 2s}}}]\n", `operations[0].variants.slow.downstream.delay 1s: shorter than the variant's duration 2s`},
		{"marker absent from body", downstreamBase + "operations: [{name: o, method: POST, path: /o, body: {a: 1}, marker: /reference}]\n", `operations[0].marker "/reference": nothing at this pointer`},
		{"marker of two kinds", downstreamBase + "operations: [{name: o, method: POST, path: /o, marker: {header: X-Ref, query: ref}}]\n", `operations[0].marker: want one of`},
		{"marker header", downstreamBase + "operations: [{name: o, method: POST, path: /o, marker: {header: \"X Ref\"}}]\n", `operations[0].marker.header "X Ref"`},
		{"marker without a double", "base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\noperations: [{name: o, method: POST, path: /o, marker: {header: X-Ref}}]\n", `operations[0].marker: a marker is for the downstream double or the events source`},
		{"bad route path", "base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\n" + "downstream: {routes: [{name: p, path: pay}]}\n" + op1, `downstream.routes[0].path "pay"`},
		{"unknown downstream field", downstreamBase + op1 + "oracle: {downstream: payments}\ndownstream_x: 1\n", `unknown field "downstream_x"`},
	} {
		_, _, err := ParseConfig([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tc.name, err, tc.want)
		}
	}
}

package wire

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// bodyTarget is a validated target of carrier kind with its key at key.
func bodyTarget(t *testing.T, yaml string) *apispec.Target {
	t.Helper()
	tg, _, err := apispec.ParseConfig([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestBodyKeyPlaces: each body carrier puts the key where its config
// says, leaves it out for a keyless request, and KeyReader reads back
// what Build wrote.
func TestBodyKeyPlaces(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, pointer string
	}{
		{"json-body keeps the body's bytes", `
base_url: http://127.0.0.1:1
principals: [{name: a, headers: {Authorization: Bearer a}}]
carrier: json-body
key: {pointer: /meta/idempotency_key}
operations: [{name: o, method: POST, path: /o, body: {b: 1, meta: {z: 1}, a: 2}}]`, "/meta/idempotency_key"},
		{"graphql variable", `
base_url: http://127.0.0.1:1
principals: [{name: a, headers: {Authorization: Bearer a}}]
carrier: graphql
key: {pointer: /input/idempotencyKey}
operations: [{name: o, query: "mutation M($input: I!) { make(input: $input) { id } }", body: {input: {n: 1}}}]`, "/variables/input/idempotencyKey"},
		{"graphql directive", `
base_url: http://127.0.0.1:1
principals: [{name: a, headers: {Authorization: Bearer a}}]
carrier: graphql
key: {directive: idempotent}
operations: [{name: o, query: "mutation M($input: I!) { make(input: $input) { id } }", body: {input: {n: 1}}}]`, ""},
		{"jsonrpc params", `
base_url: http://127.0.0.1:1
principals: [{name: a, headers: {Authorization: Bearer a}}]
carrier: jsonrpc
key: {pointer: /idempotency_key}
operations: [{name: o, call: make, body: {n: 1}}]`, "/params/idempotency_key"},
		{"mcp argument", `
base_url: http://127.0.0.1:1
principals: [{name: a, headers: {Authorization: Bearer a}}]
carrier: mcp
key: {pointer: /idempotency_key}
operations: [{name: o, tool: make, body: {n: 1}}]`, "/params/arguments/idempotency_key"},
		{"mcp _meta", `
base_url: http://127.0.0.1:1
principals: [{name: a, headers: {Authorization: Bearer a}}]
carrier: mcp
key: {meta: io.example/idempotencyKey}
operations: [{name: o, tool: make, body: {n: 1}}]`, "/params/_meta/io.example~1idempotencyKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := bodyTarget(t, tc.yaml)
			op := &tg.Operations[0]
			key := `k"ey\1`
			x := Build(tg, op, Request{Key: key})
			if !json.Valid(x.Request.Body) {
				t.Fatalf("body is not JSON: %s", x.Request.Body)
			}
			if got := KeyReader(tg)(x.Request.Header, x.Request.Body); got != key {
				t.Errorf("KeyReader = %q, want %q; body %s", got, key, x.Request.Body)
			}
			if tc.pointer != "" && jsonx.PointerText(x.Request.Body, tc.pointer) != key {
				t.Errorf("no key at %s: %s", tc.pointer, x.Request.Body)
			}
			if tg.CarrierKind() == apispec.CarrierJSONBody && string(x.Request.Body) != `{"a":2,"b":1,"meta":{"idempotency_key":"k\"ey\\1","z":1}}` {
				t.Errorf("json-body rewrote the body's bytes: %s", x.Request.Body)
			}
			none := Build(tg, op, Request{NoKey: true})
			if got := KeyReader(tg)(none.Request.Header, none.Request.Body); got != "" {
				t.Errorf("a keyless request carries key %q: %s", got, none.Request.Body)
			}
			if tg.IsMCP() && none.Request.Header.Get("Accept") != "application/json, text/event-stream" {
				t.Errorf("MCP Accept = %q", none.Request.Header.Get("Accept"))
			}
		})
	}
}

// TestDirectiveOnTopField: the directive goes on the operation's first
// field, Shopify's refundCreate(...) @idempotent(key: "…").
func TestDirectiveOnTopField(t *testing.T) {
	op := &apispec.Operation{Query: `mutation R($i: RefundInput!) { refundCreate(input: $i) { refund { id } } }`}
	doc := directiveDocument(op, "idempotent", "", "abc")
	if !strings.Contains(doc, `refundCreate(input: $i) @idempotent(key: "abc") {`) {
		t.Errorf("document:\n%s", doc)
	}
}

// TestReadAnswer: a GraphQL or JSON-RPC answer stands for the status its
// configured code names; a success for 200, its body the result without
// the envelope, the extensions and the replay marker.
func TestReadAnswer(t *testing.T) {
	gql := bodyTarget(t, `
base_url: http://127.0.0.1:1
principals: [{name: a, headers: {Authorization: Bearer a}}]
carrier: graphql
key: {directive: idempotent}
answers: {mismatch: [MISMATCH], in_flight: [BUSY], codes: {DECLINED: 402}}
operations: [{name: o, query: "mutation { make { id } }"}]`)
	mcp := bodyTarget(t, `
base_url: http://127.0.0.1:1
principals: [{name: a, headers: {Authorization: Bearer a}}]
carrier: mcp
key: {pointer: /idempotency_key}
answers: {mismatch: [IDEMPOTENCY_CONFLICT], replayed: /replayed}
operations: [{name: o, tool: make}]`)
	shopify := bodyTarget(t, `
base_url: http://127.0.0.1:1
principals: [{name: a, headers: {Authorization: Bearer a}}]
carrier: graphql
key: {directive: idempotent}
operations: [{name: o, query: "mutation { inventorySetQuantities { userErrors { code } } }"}]
profile: {preset: shopify}`)
	rpc := bodyTarget(t, `
base_url: http://127.0.0.1:1
principals: [{name: a, headers: {Authorization: Bearer a}}]
carrier: jsonrpc
key: {pointer: /idempotency_key}
answers: {mismatch: ["-32001"], codes: {"-32003": 402}}
operations: [{name: o, call: make}]`)
	js := http.Header{"Content-Type": {"application/json"}}
	sse := http.Header{"Content-Type": {"text/event-stream"}}
	for _, tc := range []struct {
		name   string
		t      *apispec.Target
		h      http.Header
		status int
		body   string
		want   int
		result string
	}{
		{"graphql data", gql, js, 200, `{"data":{"make":{"id":"1"}},"extensions":{"cost":7}}`, 200, `{"data":{"make":{"id":"1"}}}`},
		{"graphql mismatch", gql, js, 200, `{"data":{"make":null},"errors":[{"message":"m","extensions":{"code":"MISMATCH"}}]}`, 422, ""},
		{"graphql in flight", gql, js, 200, `{"errors":[{"message":"m","extensions":{"code":"BUSY"}}]}`, 409, ""},
		{"graphql userErrors", gql, js, 200, `{"data":{"make":{"id":null,"userErrors":[{"code":"DECLINED","message":"no"}]}}}`, 402, ""},
		{"graphql unnamed error", gql, js, 200, `{"errors":[{"message":"boom"}]}`, 400, ""},
		{"graphql-over-http status", gql, js, 401, `{"errors":[{"message":"who?"}]}`, 401, ""},
		{"not graphql", gql, js, 502, `bad gateway`, 502, "bad gateway"},
		{"mcp sse replay", mcp, sse, 200, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"structuredContent\":{\"id\":\"mb_1\",\"replayed\":true},\"isError\":false}}\n\n", 200, `{"id":"mb_1"}`},
		{"mcp conflict", mcp, js, 200, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"errors\":[{\"code\":\"IDEMPOTENCY_CONFLICT\"}]}"}],"isError":true}}`, 422, ""},
		{"jsonrpc invalid params", mcp, js, 200, `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}`, 400, ""},
		{"mcp expired session", mcp, js, 404, `{"error":"unknown session"}`, 404, ""},
		// The shopify preset's codes, where Shopify's schema puts them: the
		// mutation's userErrors (InventorySetQuantitiesUserErrorCode).
		{"shopify mismatch", shopify, js, 200, `{"data":{"inventorySetQuantities":{"inventoryAdjustmentGroup":null,"userErrors":[{"code":"IDEMPOTENCY_KEY_PARAMETER_MISMATCH","field":null,"message":"m"}]}}}`, 422, ""},
		{"shopify in flight", shopify, js, 200, `{"data":{"inventorySetQuantities":{"inventoryAdjustmentGroup":null,"userErrors":[{"code":"IDEMPOTENCY_CONCURRENT_REQUEST","field":null,"message":"m"}]}}}`, 409, ""},
		{"jsonrpc numeric code", rpc, js, 200, `{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"reused"}}`, 422, ""},
		{"jsonrpc numeric business code", rpc, js, 200, `{"jsonrpc":"2.0","id":3,"error":{"code":-32003,"message":"budget"}}`, 402, ""},
		{"jsonrpc result", rpc, js, 200, `{"jsonrpc":"2.0","id":3,"result":{"media_buy_id":"mb_1"}}`, 200, `{"media_buy_id":"mb_1"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ReadAnswer(tc.t, tc.status, tc.h, []byte(tc.body))
			if a.Status != tc.want {
				t.Errorf("status %d, want %d (code %q)", a.Status, tc.want, a.Code)
			}
			if tc.result != "" && string(a.Body) != tc.result {
				t.Errorf("body %s, want %s", a.Body, tc.result)
			}
		})
	}
}

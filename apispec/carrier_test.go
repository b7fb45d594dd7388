package apispec

import (
	"strings"
	"testing"
)

const carrierBase = "base_url: http://127.0.0.1:1\nprincipals: [{name: a, headers: {Authorization: Bearer a}}]\n"

// TestCarrierConfigs: the body carriers' configs load with their
// defaults (raw keys, POST to the carrier's path), and the presets
// shopify, adcp and acp validate.
func TestCarrierConfigs(t *testing.T) {
	for _, tc := range []struct{ name, yaml, path string }{
		{"graphql directive", "carrier: graphql\nkey: {directive: idempotent}\noperations: [{name: o, query: 'mutation { make { id } }'}]\nprofile: {preset: shopify}\n", "/graphql"},
		{"mcp argument", "carrier: mcp\nkey: {pointer: /idempotency_key}\noperations: [{name: o, tool: make}]\nprofile: {preset: adcp}\n", "/mcp"},
		{"jsonrpc", "carrier: jsonrpc\nkey: {pointer: /key}\noperations: [{name: o, call: make}]\n", "/rpc"},
		{"json-body", "carrier: json-body\nkey: {pointer: /meta/key}\noperations: [{name: o, method: POST, path: /o, body: {meta: {}}}]\nprofile: {preset: acp}\n", "/o"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, p, err := ParseConfig([]byte(carrierBase + tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if tg.KeySyntax != Raw || tg.Operations[0].Path != tc.path || tg.Operations[0].Method != "POST" {
				t.Errorf("key_syntax %s, %s %s", tg.KeySyntax, tg.Operations[0].Method, tg.Operations[0].Path)
			}
			if p.Name == "adcp" && (tg.Answers == nil || tg.Answers.TTLTool != "get_adcp_capabilities") {
				t.Errorf("adcp: answers %+v", tg.Answers)
			}
		})
	}
}

// TestAnswerStatusFromProfile: the idempotency codes stand for the
// profile's statuses, other codes for theirs, anything else for 400.
func TestAnswerStatusFromProfile(t *testing.T) {
	tg, _, err := ParseConfig([]byte(carrierBase + "carrier: graphql\nkey: {directive: idempotent}\n" +
		"answers: {mismatch: [M], in_flight: [F], missing: [K], codes: {D: 402}}\noperations: [{name: o, query: 'mutation { make { id } }'}]\n" +
		"profile: {preset: ietf, overrides: {mismatch_status: 409, in_flight_status: 425}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for codes, want := range map[string]int{"M": 409, "F": 425, "K": 400, "D": 402, "X": 400, "X,F": 425} {
		if got, _ := tg.AnswerStatus(strings.Split(codes, ",")); got != want {
			t.Errorf("codes %s: %d, want %d", codes, got, want)
		}
	}
}

// TestCarrierConfigErrors: each mistake is one line naming the field.
func TestCarrierConfigErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"carrier: soap\noperations: [{name: o, method: POST, path: /o}]\n", `carrier "soap": want header, json-body, graphql, jsonrpc, mcp`},
		{"carrier: graphql\noperations: [{name: o, query: 'mutation { m }'}]\n", "key: carrier graphql says where its key goes"},
		{"carrier: graphql\nkey: {directive: 'x-y'}\noperations: [{name: o, query: 'mutation { m }'}]\n", `key.directive "x-y": want a GraphQL name`},
		{"carrier: graphql\nkey: {directive: idempotent}\noperations: [{name: o}]\n", "operations[0].query: a GraphQL operation's document"},
		{"carrier: mcp\nkey: {pointer: /k}\noperations: [{name: o}]\n", "operations[0].tool: an MCP operation names the tool it calls"},
		{"carrier: jsonrpc\nkey: {meta: k}\noperations: [{name: o, call: c}]\n", `key.meta "k": an MCP request's _meta field`},
		{"carrier: json-body\nkey: {pointer: /a/k}\noperations: [{name: o, method: POST, path: /o, body: {b: 1}}]\n", `operations[0].body: key.pointer /a/k needs an object at "/a" in the body`},
		{"carrier: json-body\nkey: {pointer: /k}\noperations: [{name: o, method: POST, path: /o, body: {k: x}}]\n", "operations[0].body: holds key.pointer /k"},
		{"carrier: mcp\nkey: {pointer: /k}\nanswers: {codes: {X: 42}}\noperations: [{name: o, tool: t}]\n", "answers.codes.X 42: want an HTTP status"},
		{"answers: {mismatch: [X]}\noperations: [{name: o, method: POST, path: /o}]\n", "answers: read GraphQL, JSON-RPC and MCP answers"},
		{"carrier: header\noperations: [{name: o, method: POST, path: /o, tool: t}]\n", "operations[0].tool: an MCP tool; carrier is header"},
	} {
		_, _, err := ParseConfig([]byte(carrierBase + tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line with %q", tc.yaml, err, tc.want)
		}
	}
}

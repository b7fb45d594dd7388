package scenarios

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// bare is a carrier with no capability beyond Carrier: what a new
// carrier starts as.
type bare struct{}

func (bare) Name() string { return "bare" }
func (bare) Build(*apispec.Operation, wire.Request) wire.Exchange {
	return wire.Exchange{}
}
func (bare) Do(context.Context, wire.Exchange) (wire.Resp, wire.Exchange) {
	return wire.Resp{}, wire.Exchange{}
}
func (bare) Reach(context.Context, string) (string, error) { return "", nil }
func (bare) Close()                                        {}

// TestEveryCaseDecidedForEveryCarrier: each case of the catalog, over
// each carrier and key placement, either applies or says why not, asking
// capabilities: HTTP (every capability) runs them all; gRPC exactly the
// ones its capabilities allow, and an AEP-155 or message-field key fewer;
// a carrier with none of wire's capabilities (the start of a new one)
// skips only what needs one, each saying why. The reasons do not name a
// carrier other than the one asked.
func TestEveryCaseDecidedForEveryCarrier(t *testing.T) {
	grpcNever := []string{
		"concurrent/retry-after", "fidelity/binary-body", "fidelity/content-coding", "fidelity/created-headers",
		"lost/truncated-request", "method/get-ignores-key", "method/patch-honours-key", "mismatch/added-field",
		"mismatch/problem-link", "missing/problem-link", "problem/docs-link", "problem/no-store-stable-codes",
		"problem/problem-json", "replay/canonical-json", "replay/key-field-spelling", "replay/no-credentials", "scope/other-method",
		"syntax/cross-form", "syntax/malformed-sf-string",
	}
	http := &apispec.Target{BaseURL: "http://127.0.0.1:1"}
	meta := &apispec.Target{BaseURL: "grpc://127.0.0.1:1"}
	field := &apispec.Target{BaseURL: "grpc://127.0.0.1:1", Key: &apispec.KeyPlace{Field: "request_id"}}
	aep := &apispec.Target{BaseURL: "grpc://127.0.0.1:1", Key: &apispec.KeyPlace{Field: "idempotency_key", FirstSent: true}}
	body := func(kind string) *apispec.Target {
		return &apispec.Target{BaseURL: "http://127.0.0.1:1", Carrier: kind, Key: &apispec.KeyPlace{Pointer: "/idempotency_key"}}
	}
	jsonBody, graphQL, jsonRPC, mcp := body(apispec.CarrierJSONBody), body(apispec.CarrierGraphQL), body(apispec.CarrierJSONRPC), body(apispec.CarrierMCP)
	// What a carrier reading its answers from a JSON document lacks: every
	// header, method and raw-body case; what it keeps: the rest.
	answered := slices.Sorted(slices.Values(append(slices.Clone(grpcNever), "syntax/repeated-header")))
	for _, tc := range []struct {
		name  string
		c     wire.Carrier
		t     *apispec.Target
		never []string // nil: checked only to decide
	}{
		{"HTTP", carrierOf(http), http, []string{}},
		{"gRPC metadata key", carrierOf(meta), meta, grpcNever},
		{"gRPC field key", carrierOf(field), field, slices.Sorted(slices.Values(append(slices.Clone(grpcNever), "syntax/repeated-header")))},
		{"gRPC AEP-155 key", carrierOf(aep), aep, slices.Sorted(slices.Values(append(slices.Clone(grpcNever), "expiry/counted-from", "expiry/edge-burst", "expiry/fresh-after-ttl", "outbox/fresh-id-after-expiry", "syntax/repeated-header")))},
		{"JSON body key", carrierOf(jsonBody), jsonBody, []string{"replay/key-field-spelling", "syntax/cross-form", "syntax/malformed-sf-string", "syntax/repeated-header"}},
		{"GraphQL", carrierOf(graphQL), graphQL, answered},
		{"JSON-RPC", carrierOf(jsonRPC), jsonRPC, answered},
		{"MCP", carrierOf(mcp), mcp, answered},
		{"no capabilities", bare{}, http, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skipped := map[string]string{}
			for _, c := range Catalog() {
				why := c.unfit(tc.c, tc.t)
				if why == "" {
					continue
				}
				skipped[c.ID] = why
				if !strings.HasPrefix(why, "does not apply to ") {
					t.Errorf("%s: %q, want it to say where it does not apply", c.ID, why)
				}
				if n := tc.c.Name(); !strings.HasPrefix(why, "does not apply to "+n+": ") && !strings.HasPrefix(why, "does not apply to a") {
					t.Errorf("%s: %q does not name the carrier asked (%s)", c.ID, why, n)
				}
			}
			got := slices.Sorted(maps.Keys(skipped))
			if tc.never != nil && !slices.Equal(got, tc.never) {
				t.Errorf("skipped %v, want %v", got, tc.never)
			}
			if tc.never == nil && len(got) < len(grpcNever) {
				t.Errorf("a carrier without capabilities skips only %v", got)
			}
		})
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// TestGRPCWording: what list and run say a config lacks, and the
// requirement sentences they print, in the target's terms. Against the
// reference over HTTP and the reference gRPC service, each config without
// a slow variant: over gRPC the fixes name a message field or the
// downstream double and code names, the replicas grpc:// addresses, and a
// case judged by a gRPC form has its sentence's gRPC note (the key's
// field, the profile's codes); a case with no gRPC form says so rather
// than asking for config. Over HTTP the same lines keep their HTTP words
// and no note.
func TestGRPCWording(t *testing.T) {
	httpCfg := writeTemp(t, "http.yaml", "base_url: "+demotest.Serve(t, demo.Options{})+`
key_header: Idempotency-Key
principals: [{name: alice, headers: {Authorization: Bearer alice}}, {name: bob, headers: {Authorization: Bearer bob}}]
oracle: {url: "/v1/effects?key={key}", pointer: /executions}
operations:
  - {name: payments, method: POST, path: /v1/charges, headers: {Content-Type: application/json}, body: {amount: 1000, currency: usd}, id_pointer: /id}
`)
	httpBase, grpcBase := demotest.ServeGRPC(t, demo.Options{})
	noSlow := strings.Replace(demotest.GRPCConfig(httpBase, grpcBase), "    variants:\n      slow: {patch: {knobs: {delay_ms: 600}}, duration: 600ms}\n", "", 1)
	if strings.Contains(noSlow, "slow:") {
		t.Fatal("the gRPC config still has its slow variant")
	}
	grpcCfg := writeTemp(t, "grpc.yaml", noSlow)
	for _, tc := range []struct {
		name, config string
		list         []string // in list's output
		run          []string // in run's console report
		requirement  string   // in syntax/key-accepted's JSON requirement
		forbidden    []string // in either
	}{
		{"HTTP", httpCfg,
			[]string{
				"(IK-CONCURRENT-1,IK-CONCURRENT-2,IK-LEASE-3): add a slow variant (variants.slow: a body or a downstream delay that keeps the request in flight)",
				"add replicas: two or more base URLs of one API",
				"lacks binary",
				"the resource SHOULD reply with HTTP 422 (status per profile).\n",
				`{name: authorise-only, query: {capture: "false"}}`,
			},
			[]string{"needs slow; add operations[].variants.slow: {patch: {delay_ms: 1500}, duration: 1500ms} (a body that keeps the handler busy)"},
			"draft §2.1: the Idempotency-Key field value MUST be an sf-string (RFC 9651 §3.3.3); a server following its profile accepts keys in that form.",
			[]string{"Over gRPC", "grpc://", "UNAVAILABLE"}},
		{"gRPC", grpcCfg,
			[]string{
				"(IK-CONCURRENT-1,IK-CONCURRENT-2,IK-LEASE-3): add a slow variant (variants.slow: a message field, or the downstream double's delay, that keeps the call in flight)",
				"add replicas: two or more grpc:// addresses of one service",
				"skips: does not apply to gRPC: the answer is a message",
				"(status per profile). Over gRPC: a changed request message under a used key gets INVALID_ARGUMENT (gRPC has no 422).",
				"Over gRPC: the conflict is ABORTED.",
				"Over gRPC: the key is the request_id field of the request message; a call without one (the field unset, or empty) gets INVALID_ARGUMENT",
				"no operation declares a mutation of the metadata",
			},
			[]string{"needs slow; add operations[].variants.slow: {downstream: {route: payments, delay: 1500ms}, duration: 1500ms} (the downstream double holds the service's call; or patch: a message field that keeps the handler busy)"},
			"Over gRPC: the key is the request_id field of the request message, not an HTTP field: no sf-string, a string in the profile's key format.",
			[]string{"variants.slow: a body", "{patch: {delay_ms: 1500}", "base URLs of one API", "lacks binary", "query: {capture"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := runCLI(t, "list", "--config", tc.config)
			if l.code != exitOK {
				t.Fatalf("list: exit %d\n%s%s", l.code, l.stdout, l.stderr)
			}
			jsonPath := filepath.Join(t.TempDir(), "r.json")
			r := runCLI(t, "run", "--config", tc.config, "--run", "concurrent/in-flight-offsets", "--run", "syntax/key-accepted", "--json", jsonPath)
			if r.code != exitOK {
				t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, w := range tc.list {
				if !strings.Contains(l.stdout, w) {
					t.Errorf("list lacks %q:\n%s", w, l.stdout)
				}
			}
			for _, w := range tc.run {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("run lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, f := range tc.forbidden {
				if strings.Contains(l.stdout, f) || strings.Contains(r.stdout, f) {
					t.Errorf("list or run says %q over %s:\n%s\n%s", f, tc.name, l.stdout, r.stdout)
				}
			}
			var rep struct {
				Results []struct {
					ID, Requirement string
				} `json:"results"`
			}
			b, err := os.ReadFile(jsonPath)
			if err == nil {
				err = json.Unmarshal(b, &rep)
			}
			found := false
			for _, res := range rep.Results {
				if res.ID == "syntax/key-accepted" {
					found = strings.Contains(res.Requirement, tc.requirement)
				}
			}
			if err != nil || !found {
				t.Errorf("--json (%v): syntax/key-accepted's requirement lacks %q", err, tc.requirement)
			}
		})
	}
}

package main

import (
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/target"
)

// grpcNotYet refuses a gRPC target in a face that has no gRPC form yet
// (docs/grpc.md, "Not yet"): one line, exit 2, never an HTTP client aimed
// at a gRPC port. It looks at the flags' URLs before loading (a bare
// --target grpc://... would otherwise fail on its missing key: section)
// and at the loaded target, nil before loading.
func grpcNotYet(face string, sel scenarios.Selection, t *target.Target) error {
	grpc := t != nil && t.IsGRPC()
	for _, u := range append([]string{sel.Target, sel.BaseURL}, sel.Replicas...) {
		grpc = grpc || target.IsGRPCURL(u)
	}
	if !grpc {
		return nil
	}
	return usageErrorf("%s: gRPC targets are not supported yet (docs/grpc.md); the conformance run is (copy examples/grpc.yaml, then idemcheck run --config)", face)
}

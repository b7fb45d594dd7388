package idemchecktest

import (
	"net"
	"testing"

	"google.golang.org/grpc"
)

// GRPCServer serves srv on a loopback listener for the duration of the
// test and checks it like Run, as Handler does an http.Handler: srv is
// the caller's, with its services registered and, unless cfg's config
// names a protoset, server reflection (the carrier learns the methods
// from it). cfg.Config is required (a gRPC target's key place and RPCs
// are the config's; docs/grpc.md); its base_url may be left out: the
// listener's replaces it. cfg.Target must be empty. srv is stopped when
// the test ends.
//
// A loopback listener rather than bufconn: the catalog's calls, bursts
// and evidence then cross a real HTTP/2 connection, as in production.
func GRPCServer(t *testing.T, srv *grpc.Server, cfg Config, opts ...Option) {
	t.Helper()
	switch {
	case cfg.Target != "":
		t.Fatalf("idemcheck: GRPCServer serves srv itself: leave Config.Target empty (got %q)", cfg.Target)
	case cfg.Config == "":
		t.Fatal("idemcheck: GRPCServer needs Config.Config: a gRPC target's key: and operations' rpc: are in its config (docs/grpc.md)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("idemcheck: %v", err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	// Registered before check's, so it runs after the engine is done
	// (cleanups run last-in first-out).
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	cfg.BaseURL = "grpc://" + ln.Addr().String()
	target, profile, err := cfg.Load()
	if err != nil {
		t.Fatalf("idemcheck: %v", err)
	}
	check(t, target, profile, nil, opts)
}

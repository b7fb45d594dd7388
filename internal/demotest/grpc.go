package demotest

import (
	"net"
	"testing"

	"google.golang.org/grpc"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/grpcref"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// ServeGRPC starts what idemcheck serve --grpc serves: the demo app over
// HTTP and the reference gRPC payments service with defects, on one
// memory store, the gRPC executions counted in the app's effects oracle.
// It returns the HTTP base URL (the oracle's) and the grpc:// one; all is
// closed when t ends.
func ServeGRPC(t testing.TB, o demo.Options, defects ...reference.Defect) (httpBase, grpcBase string) {
	t.Helper()
	httpBase, g := GRPCServer(t, o, defects)
	return httpBase, ServeGRPCServer(t, g)
}

// ServeGRPCServer serves g on a loopback listener until t ends and
// returns its grpc:// base URL.
func ServeGRPCServer(t testing.TB, g *grpc.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = g.Serve(ln)
	}()
	t.Cleanup(func() {
		g.Stop()
		<-served
	})
	return "grpc://" + ln.Addr().String()
}

// GRPCServer is ServeGRPC's gRPC server not yet serving (the go-test
// face serves it itself): the reference service and reflection
// registered, the demo app serving its effects oracle at httpBase; opts
// are the server's (an interceptor that plays a defect the service has
// not). The caller serves and stops g; the service, app and store close
// when t ends, after the caller's cleanups registered later.
func GRPCServer(t testing.TB, o demo.Options, defects []reference.Defect, opts ...grpc.ServerOption) (httpBase string, g *grpc.Server) {
	t.Helper()
	store := memstore.New()
	o.Store = store
	app, err := demo.New(o)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := grpcref.New(grpcref.Options{Store: store, TTL: o.TTL, Lease: o.Lease, Defects: defects, Executing: app.Executing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = svc.Close()
		_ = app.Close()
		_ = store.Close()
	})
	g = grpc.NewServer(opts...)
	svc.Register(g)
	return ServeOn(t, app, "127.0.0.1:0"), g
}

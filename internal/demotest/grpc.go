package demotest

import (
	"fmt"
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
// not). With o.Events the service's events join the store's outbox,
// which the app's relay publishes. The caller serves and stops g; the
// service, app and store close when t ends, after the caller's cleanups
// registered later.
func GRPCServer(t testing.TB, o demo.Options, defects []reference.Defect, opts ...grpc.ServerOption) (httpBase string, g *grpc.Server) {
	t.Helper()
	store := memstore.New()
	o.Store = store
	app, err := demo.New(o)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := grpcref.New(grpcref.Options{Store: store, TTL: o.TTL, Lease: o.Lease, Defects: defects, Executing: app.Executing, Events: o.Events != nil})
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

// GRPCConfig is a config of the reference gRPC service's CreatePayment
// (AIP-155) at grpcBase, counted by the effects oracle at httpBase; with
// grpcBase "" it has no base_url (idemchecktest.GRPCServer's listener is
// the target).
func GRPCConfig(httpBase, grpcBase string) string {
	base := ""
	if grpcBase != "" {
		base = "base_url: " + grpcBase + "\n"
	}
	return base + fmt.Sprintf(`key: {field: request_id}
principals:
  - {name: alice, metadata: {authorization: Bearer alice}}
  - {name: bob, metadata: {authorization: Bearer bob}}
oracle: {url: "%s/v1/effects?key={key}", pointer: /executions}
operations:
  - name: payments
    rpc: idemcheck.reference.v1.PaymentService/CreatePayment
    body: {parent: accounts/a1, payment: {amount: 1000, currency: USD}}
    id_pointer: /name
    mutations: [{name: changed-amount, patch: {payment: {amount: 1001}}}]
    variants:
      slow: {patch: {knobs: {delay_ms: 600}}, duration: 600ms}
profile:
  preset: aip-155
  overrides: {key_required: true, missing_status: INVALID_ARGUMENT, mismatch_status: INVALID_ARGUMENT, in_flight_status: ABORTED, block_ok: false, stale_replay_on_mismatch: false, burst_rounds: 2}
`, httpBase)
}

// GRPCReplicas serves the reference gRPC service as replicas, what as
// many `idemcheck serve --grpc` processes are: each a grpc.Server of its
// own on a loopback port, with a service on its store (one store for
// all: replicas of one API; one each: a store local to each replica).
// All count their executions in one effects oracle, at httpBase, as all
// would charge one payment provider. It returns that and the replicas'
// grpc:// base URLs; all is closed when t ends.
func GRPCReplicas(t testing.TB, o demo.Options, stores ...reference.Store) (httpBase string, grpcBases []string) {
	t.Helper()
	appStore := memstore.New() // the app's own API is not called: only its effects oracle
	o.Store = appStore
	app, err := demo.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = app.Close()
		_ = appStore.Close()
	})
	for _, s := range stores {
		svc, err := grpcref.New(grpcref.Options{Store: s, TTL: o.TTL, Lease: o.Lease, Executing: app.Executing})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Close() })
		g := grpc.NewServer()
		svc.Register(g)
		grpcBases = append(grpcBases, ServeGRPCServer(t, g))
	}
	return ServeOn(t, app, "127.0.0.1:0"), grpcBases
}

package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/grpcref"
)

// serveGRPC serves the reference gRPC payments service at f.grpc beside
// the HTTP reference: the same store, TTL and lease, the defects that
// have a gRPC form, its executions counted in the HTTP effects oracle,
// and with --events its events in the store's outbox, which the HTTP
// reference's relay publishes.
// The returned func stops it gracefully (forcibly after the shutdown
// timeout).
func serveGRPC(stdout io.Writer, f serveFlags, store reference.Store, app *demo.App, defects []string, tlsConf *tls.Config) (stop func(), err error) {
	var ds []reference.Defect
	for _, d := range defects {
		if reference.Defect(d) == reference.RelayRepublish {
			continue // the relay's: it publishes the gRPC service's events too
		}
		if grpcref.Supports(reference.Defect(d)) {
			ds = append(ds, reference.Defect(d))
		} else {
			fmt.Fprintf(stdout, "idemcheck: --defect %s has no gRPC form: the gRPC service runs without it\n", d)
		}
	}
	svc, err := grpcref.New(grpcref.Options{Store: store, TTL: f.ttl, Lease: f.lease, Defects: ds, Executing: app.Executing, Events: f.events != ""})
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	ln, err := net.Listen("tcp", f.grpc)
	if err != nil {
		return nil, usageErrorf("--grpc %s: cannot listen: %v", f.grpc, err)
	}
	var opts []grpc.ServerOption
	scheme := "grpc"
	if tlsConf != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConf)))
		scheme = "grpcs"
	}
	g := grpc.NewServer(opts...)
	svc.Register(g)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = g.Serve(ln) // ends when stopped
	}()
	fmt.Fprintf(stdout, "idemcheck: listening on %s://%s (gRPC, reflection on)\n", scheme, ln.Addr())
	return func() {
		graceful := make(chan struct{})
		go func() {
			g.GracefulStop()
			close(graceful)
		}()
		select {
		case <-graceful:
		case <-time.After(serveShutdownTimeout):
			g.Stop()
			<-graceful
		}
		<-served
		_ = svc.Close()
	}, nil
}

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/net/http/httpguts"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/minheap"
	"github.com/idemcheck/idemcheck/reference/outbox"
)

// Server timeouts. WriteTimeout outlives the demo's longest delay_ms (60 s).
const (
	serveReadHeaderTimeout = 5 * time.Second
	serveReadTimeout       = 30 * time.Second
	serveWriteTimeout      = 75 * time.Second
	serveIdleTimeout       = 120 * time.Second
	serveShutdownTimeout   = 10 * time.Second
)

type serveFlags struct {
	addr        string
	ttl, lease  time.Duration
	defects     []string
	keyOptional bool
	store       string
	maxBody     int64
	stores      storeFlags
	// fingerprintHeaders: request fields that are part of a request's
	// identity besides its query and body.
	fingerprintHeaders []string
	// h2c: HTTP/2 with prior knowledge beside HTTP/1.1 on the plain port.
	h2c bool
	// tlsCert, tlsKey: serve HTTPS, HTTP/2 negotiated by ALPN.
	tlsCert, tlsKey string
	events          string
	// grpc: also serve the reference gRPC payments service there.
	grpc string
}

func init() {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the reference implementation (demo payments API) with optional defects",
		Long: "Serve the reference Idempotency-Key implementation: POST /v1/charges and /v1/refunds\n" +
			"(Authorization: Bearer <user>), GET /v1/effects?key=K (execution oracle), GET /healthz.\n" +
			"A request's identity under its key is its body, its query (POST /v1/charges?capture=false\n" +
			"authorises only) and the --fingerprint-header fields (Api-Version, echoed as api_version).\n" +
			"Unless GOGC is set, Go's collector waits for the heap to reach 16 MB before it runs\n" +
			"(reference/minheap); above that it runs as at Go's default.\n" +
			"Defects: " + strings.Join(demo.DefectNames(), ", "),
		Example: `  idemcheck serve --addr 127.0.0.1:8080
  idemcheck serve --addr 127.0.0.1:8082 --h2c
  idemcheck serve --addr 127.0.0.1:8443 --tls-cert cert.pem --tls-key key.pem
  idemcheck serve --addr 127.0.0.1:8081 --ttl 3s --defect no-fingerprint --defect no-inflight-lock
  idemcheck serve --addr 127.0.0.1:8080 --grpc 127.0.0.1:50051
  idemcheck serve --store redis --redis-url redis://127.0.0.1:6379/0
  idemcheck serve --store postgres --dsn "$DATABASE_URL" --events kafka://127.0.0.1:9092/charges.events`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The process's setting, so here and not in runServe, which
			// tests run side by side in one process.
			defer minheap.KeepUnlessSet(minheap.Default)()
			return runServe(cmd.Context(), cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen address (port 0 picks a free port)")
	fl.DurationVar(&f.ttl, "ttl", 24*time.Hour, "how long idempotency records live")
	fl.DurationVar(&f.lease, "lease", 30*time.Second, "how long an in-flight record stays locked")
	fl.StringArrayVar(&f.defects, "defect", nil, "switch on a defect; repeatable (a comma-separated list works too)")
	fl.BoolVar(&f.keyOptional, "key-optional", false, "let requests without Idempotency-Key run unprotected instead of 400")
	fl.StringVar(&f.store, "store", "memory", "idempotency store: memory, postgres (--dsn) or redis (--redis-url)")
	fl.Int64Var(&f.maxBody, "max-body", 1<<20, "request body limit in bytes (413 beyond)")
	fl.BoolVar(&f.h2c, "h2c", false, "also serve HTTP/2 without TLS to clients that start with its preface (prior knowledge), beside HTTP/1.1 on the same port")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate (chain) file; HTTP/2 and HTTP/1.1 are offered by ALPN (needs --tls-key)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "the PEM private key of --tls-cert")
	fl.StringArrayVar(&f.fingerprintHeaders, "fingerprint-header", demo.DefaultFingerprintHeaders,
		"a request header that is part of the request's identity, as the body and the query are (the same key with another value: 422); repeatable; \"\" for none")
	fl.StringVar(&f.events, "events", "", "publish a charge.created event per execution through the store's outbox: kafka://HOST:PORT/TOPIC, redis://HOST:PORT/DB?stream=NAME or nats://HOST:PORT/STREAM?subject=SUBJECT")
	fl.StringVar(&f.grpc, "grpc", "", "also serve the reference gRPC payments service (idemcheck.reference.v1.PaymentService, server reflection on) at this address, on the same store; its executions count in GET /v1/effects")
	fl.StringVar(&f.stores.DSN, "dsn", "", "PostgreSQL connection string (--store postgres)")
	fl.StringVar(&f.stores.RedisURL, "redis-url", "", "Redis URL (--store redis)")
	fl.Int32Var(&f.stores.PGMaxConns, "pg-max-conns", 0, "PostgreSQL pool size; 0: 2 per CPU, at least 8 (--store postgres)")
	fl.Int32Var(&f.stores.PGMinConns, "pg-min-conns", 0, "PostgreSQL connections kept open when idle, so a burst finds them open; 0: the pool size (--store postgres)")
	rootCmd.AddCommand(cmd)
}

// defectList reads every --defect: repeated, comma-separated or both;
// blanks are ignored, an unknown name is a usage error.
func defectList(args []string) ([]string, error) {
	var defects []string
	for _, arg := range args {
		for _, d := range strings.Split(arg, ",") {
			if d = strings.TrimSpace(d); d == "" {
				continue
			}
			if _, _, ok := demo.DefectDoc(d); !ok {
				return nil, usageErrorf("--defect %q: unknown defect (known: %s)", d, strings.Join(demo.DefectNames(), ", "))
			}
			defects = append(defects, d)
		}
	}
	return defects, nil
}

// headerNames reads --fingerprint-header: nil (not set) is the demo's
// default; blanks are dropped (so "" names none), anything else must be a
// field name.
func headerNames(args []string) ([]string, error) {
	if args == nil {
		return nil, nil
	}
	names := []string{} // not nil: none means none, not the demo's default
	for _, n := range args {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if !httpguts.ValidHeaderFieldName(n) {
			return nil, usageErrorf("--fingerprint-header %q: not a header field name", n)
		}
		names = append(names, n)
	}
	return names, nil
}

// serveTLS loads --tls-cert and --tls-key (nil without them).
func serveTLS(f serveFlags) (*tls.Config, error) {
	switch {
	case f.tlsCert == "" && f.tlsKey == "":
		return nil, nil
	case f.tlsCert == "" || f.tlsKey == "":
		return nil, usageErrorf("--tls-cert and --tls-key: give both or neither")
	case f.h2c:
		return nil, usageErrorf("--h2c: HTTP/2 without TLS; with --tls-cert HTTP/2 is negotiated by ALPN")
	}
	cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
	if err != nil {
		return nil, usageErrorf("--tls-cert %s: %v", f.tlsCert, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// checkServeFlags refuses bad flags before anything starts (usage
// errors) and reads the defects, the fingerprint headers and the TLS
// configuration (nil: plain HTTP).
func checkServeFlags(f serveFlags) (defects, fpHeaders []string, tlsConf *tls.Config, err error) {
	if f.ttl <= 0 {
		return nil, nil, nil, usageErrorf("--ttl %s: must be positive", f.ttl)
	}
	if f.lease <= 0 {
		return nil, nil, nil, usageErrorf("--lease %s: must be positive", f.lease)
	}
	if f.maxBody <= 0 {
		return nil, nil, nil, usageErrorf("--max-body %d: must be positive", f.maxBody)
	}
	if f.stores.PGMaxConns < 0 {
		return nil, nil, nil, usageErrorf("--pg-max-conns %d: must be positive (0: the default)", f.stores.PGMaxConns)
	}
	if f.stores.PGMinConns < 0 || (f.stores.PGMaxConns > 0 && f.stores.PGMinConns > f.stores.PGMaxConns) {
		return nil, nil, nil, usageErrorf("--pg-min-conns %d: must be 0 (the default) to --pg-max-conns", f.stores.PGMinConns)
	}
	if defects, err = defectList(f.defects); err != nil {
		return nil, nil, nil, err
	}
	if fpHeaders, err = headerNames(f.fingerprintHeaders); err != nil {
		return nil, nil, nil, err
	}
	if tlsConf, err = serveTLS(f); err != nil {
		return nil, nil, nil, err
	}
	for _, d := range defects {
		if f.grpc == "" && reference.Defect(d).GRPCOnly() {
			return nil, nil, nil, usageErrorf("--defect %s: needs --grpc (only the gRPC service's AEP-155 method has a first_sent)", d)
		}
	}
	if f.events == "" {
		for _, d := range defects {
			if reference.Defect(d).NeedsEvents() {
				return nil, nil, nil, usageErrorf("--defect %s: needs --events (it breaks the events the server publishes)", d)
			}
		}
	}
	return defects, fpHeaders, tlsConf, nil
}

// newServer is the HTTP server of app on ln: bounded timeouts, requests
// under reqCtx, HTTP/1.1 with h2c or (tlsConf) HTTPS with h2; scheme is
// http or https. ln comes back wrapped when a defect needs the field
// names as sent.
func newServer(reqCtx context.Context, app http.Handler, ln net.Listener, h2c bool, tlsConf *tls.Config, defects []string) (*http.Server, net.Listener, string) {
	srv := &http.Server{
		Handler:           app,
		ReadHeaderTimeout: serveReadHeaderTimeout,
		ReadTimeout:       serveReadTimeout,
		WriteTimeout:      serveWriteTimeout,
		IdleTimeout:       serveIdleTimeout,
		MaxHeaderBytes:    64 << 10,
		// Requests keep running through a graceful shutdown and are only
		// cancelled when it times out.
		BaseContext: func(net.Listener) context.Context { return reqCtx },
	}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(h2c)
	scheme := "http"
	if tlsConf != nil {
		srv.TLSConfig = tlsConf
		srv.Protocols.SetHTTP2(true)
		scheme = "https"
	} else if slices.Contains(defects, string(reference.ExactKeySpelling)) {
		// The defect needs field names as sent, read from the plain bytes
		// (over TLS it shows on HTTP/2 requests only, lower case by
		// protocol); the correct build does not pay for reading them.
		ln = reference.KeepFieldSpelling(srv, ln)
	}
	return srv, ln, scheme
}

// runServe validates the flags, serves until SIGINT/SIGTERM (or ctx ends)
// and shuts down gracefully.
func runServe(ctx context.Context, stdout io.Writer, f serveFlags) error {
	defects, fpHeaders, tlsConf, err := checkServeFlags(f)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	var events outbox.Publisher
	if f.events != "" {
		if events, err = outbox.Open(ctx, f.events); err != nil {
			return usageErrorf("--events: %s", oneLine(err))
		}
		// Deferred first, so closed last: after the app's relay stopped.
		defer func() { _ = events.Close() }()
	}

	store, ledger, closeStore, err := openStore(ctx, f.store, &f.stores)
	if err != nil {
		return withCode(exitUsage, err)
	}
	defer func() { _ = closeStore() }()
	app, err := demo.New(demo.Options{
		Store: store, Ledger: ledger, TTL: f.ttl, Lease: f.lease,
		Defects: defects, KeyOptional: f.keyOptional, MaxBody: f.maxBody,
		FingerprintHeaders: fpHeaders,
		Events:             events, // a nil Publisher stays nil: no events
	})
	if err != nil {
		return withCode(exitUsage, err)
	}
	defer func() { _ = app.Close() }()

	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return usageErrorf("--addr %s: cannot listen: %v", f.addr, err)
	}
	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	srv, ln, scheme := newServer(reqCtx, app, ln, f.h2c, tlsConf, defects)
	fmt.Fprintf(stdout, "idemcheck: listening on %s://%s\n", scheme, ln.Addr())
	if f.grpc != "" {
		stopGRPC, err := serveGRPC(stdout, f, store, app, defects, tlsConf)
		if err != nil {
			return err
		}
		defer stopGRPC()
	}

	served := make(chan error, 1)
	go func() {
		if tlsConf != nil {
			served <- srv.ServeTLS(ln, "", "")
			return
		}
		served <- srv.Serve(ln)
	}()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), serveShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		cancelRequests()
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

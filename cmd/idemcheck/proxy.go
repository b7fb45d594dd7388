package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
)

type proxyFlags struct {
	listen, upstream, control, history string
	faults                             []string
	seed                               uint64
	keyHeader, idPointer               string
	maxKeys                            int
	tls                                apispec.TLS
}

func init() {
	var f proxyFlags
	cmd := &cobra.Command{
		Use:   "proxy --listen ADDR --upstream URL [--fault SPEC]...",
		Short: "Run the per-request fault proxy in front of an API",
		Long: "Forward HTTP requests to --upstream, injecting faults per request: drop the response after\n" +
			"the upstream committed, drop the request, delay, reset mid-body, duplicate, answer a status,\n" +
			"truncate the request. Every attempt is one JSONL line in --history (check it with\n" +
			"idemcheck analyze). The control API (--control, loopback only) lists, adds and removes faults.\n" +
			"The proxy forwards to whatever --upstream names (http or https; --ca-cert, --client-cert and\n" +
			"--insecure-skip-verify reach an https upstream): point it at a test deployment.\n\n" +
			"Fault specs: KIND[:P | :key=value,...], e.g. drop-response:0.3, drop-response:p=0.3,mode=rst,\n" +
			"delay:p=1,before=200ms, status:p=0.1,code=503, drop-response:attempt=1,\n" +
			"duplicate:p=0.1,mode=concurrent, ...,path=/v1/charges,method=POST,header=X-Foo:bar.\n" +
			"Kinds: " + strings.Join(chaos.Kinds(), ", "),
		Example: `  idemcheck proxy --listen 127.0.0.1:8480 --upstream http://127.0.0.1:8080 --fault drop-response:0.3 --history attempts.jsonl
  idemcheck proxy --upstream http://127.0.0.1:8080 --fault status:p=0.1,code=503 --control 127.0.0.1:8474 --seed 7
  idemcheck analyze attempts.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runProxy(ctx, cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8480", "address the proxy listens on")
	fl.StringVar(&f.upstream, "upstream", "", "base URL requests are forwarded to (required)")
	addFaultFlag(fl, &f.faults)
	fl.StringVar(&f.control, "control", "", "address of the JSON control API (loopback only), e.g. 127.0.0.1:8474")
	addHistoryFlag(fl, &f.history)
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the per-request probability draws")
	fl.IntVar(&f.maxKeys, "max-keys", 1<<18, "keys whose attempt numbers are remembered, per generation (bounds the proxy's memory)")
	fl.StringVar(&f.keyHeader, "key-header", "Idempotency-Key", keyHeaderUsage)
	fl.StringVar(&f.idPointer, "id-pointer", "/id", "JSON pointer to the created id in a 2xx response body")
	tlsFlags(fl, &f.tls)
	rootCmd.AddCommand(cmd)
}

func runProxy(ctx context.Context, stderr io.Writer, f proxyFlags) error {
	if f.upstream == "" {
		return usageErrorf("--upstream is required")
	}
	if f.maxKeys < 1 {
		return usageErrorf("--max-keys %d: want at least 1", f.maxKeys)
	}
	if f.control != "" {
		if err := loopbackAddr("--control", f.control); err != nil {
			return err
		}
	}
	tc, err := f.tls.Config()
	if err != nil {
		return usageErrorf("--%s", strings.ReplaceAll(err.Error(), "_", "-"))
	}
	var hist *chaos.History
	if f.history != "" {
		if hist, err = chaos.CreateHistory(f.history); err != nil {
			return withCode(exitUsage, err)
		}
	}
	// No WithTransport: the proxy's own keep-alive pool never re-sends a request.
	p, err := chaos.New(f.upstream, chaos.WithKeyHeader(f.keyHeader), chaos.WithIDPointer(f.idPointer),
		chaos.WithHistory(hist), chaos.WithSeed(f.seed), chaos.WithMaxKeys(f.maxKeys), chaos.WithTLS(tc))
	if err != nil {
		hist.Close()
		return usageErrorf("--upstream: %v", err)
	}
	defer p.Close()
	for _, spec := range f.faults {
		if _, err := p.AddRule(spec); err != nil {
			hist.Close()
			return usageErrorf("--fault: %v", err)
		}
	}
	front, err := chaos.ListenOn(p, f.listen)
	if err != nil {
		hist.Close()
		return usageErrorf("listen %s: %v", f.listen, err)
	}
	fmt.Fprintf(stderr, "idemcheck proxy: %s -> %s\n", front.Addr(), f.upstream)
	errs := make(chan error, 1)
	var control *http.Server
	if f.control != "" {
		control = &http.Server{Addr: f.control, Handler: chaos.Control(p), ReadHeaderTimeout: 10 * time.Second}
		ln, err := net.Listen("tcp", f.control)
		if err != nil {
			_ = front.Close()
			hist.Close()
			return usageErrorf("listen %s: %v", f.control, err)
		}
		fmt.Fprintf(stderr, "idemcheck proxy: control API on %s\n", ln.Addr())
		go func() { errs <- control.Serve(ln) }()
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs:
	}
	_ = front.Close() // lets attempts in progress finish, so their history lines are written
	if control != nil {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = control.Shutdown(shutdown)
	}
	if err := hist.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if errors.Is(runErr, http.ErrServerClosed) {
		runErr = nil
	}
	return runErr
}

// loopbackAddr refuses a listen address that is not on loopback.
func loopbackAddr(flag, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("%s %q: want host:port", flag, addr)
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return usageErrorf("%s %q: the control API listens on loopback only (e.g. 127.0.0.1:8474)", flag, addr)
	}
	return nil
}

package main

//go:generate protoc -I shopv1 -I /usr/include --go_out=shopv1 --go_opt=paths=source_relative --go-grpc_out=shopv1 --go-grpc_opt=paths=source_relative shopv1/checkout.proto

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/idemcheck/idemcheck/examples/grpcshop/shopv1"
)

func main() {
	if err := serve(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "grpcshop:", err)
		os.Exit(2)
	}
}

// options is how the service is started.
type options struct {
	addr, dsn, providerURL string
	ttl, lease, timeout    time.Duration
	apiKeys                map[string]string // API key -> customer
	defect                 defect
}

// parse reads the flags and the environment, and says what is wrong
// naming the flag or variable.
func parse(args []string) (options, error) {
	o := options{dsn: os.Getenv("DATABASE_URL")}
	fs := flag.NewFlagSet("grpcshop", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:50061", "listen address")
	fs.StringVar(&o.providerURL, "provider-url", os.Getenv("PROVIDER_URL"), "the card provider's base URL (default $PROVIDER_URL)")
	fs.DurationVar(&o.ttl, "ttl", 24*time.Hour, "how long a key's outcome is kept, from completion; also the oldest first_sent accepted")
	fs.DurationVar(&o.timeout, "provider-timeout", 3*time.Second, "the bound on one provider call")
	fs.DurationVar(&o.lease, "lease", 0, "how long a running request holds its key (default: the provider timeout + 10s)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.defect, err = parseDefect(os.Getenv("GRPCSHOP_DEFECT")); err != nil {
		return o, err
	}
	if o.apiKeys, err = parseAPIKeys(os.Getenv("GRPCSHOP_API_KEYS")); err != nil {
		return o, err
	}
	if o.lease == 0 {
		o.lease = o.timeout + 10*time.Second
	}
	switch u, perr := url.Parse(o.providerURL); {
	case o.dsn == "":
		return o, errors.New("DATABASE_URL is not set")
	case perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return o, fmt.Errorf("-provider-url %q: want the provider's absolute http(s) URL", o.providerURL)
	case o.ttl <= 0 || o.timeout <= 0:
		return o, errors.New("-ttl and -provider-timeout must be positive")
	case o.lease <= o.timeout:
		// A claim must outlive the longest execution it covers, or a
		// retry takes the key over while the provider still charges.
		return o, fmt.Errorf("-lease %s: must exceed -provider-timeout %s", o.lease, o.timeout)
	}
	if o.defect == leaseLapses {
		o.lease = time.Second
	}
	return o, nil
}

// parseAPIKeys reads "key=customer,key=customer".
func parseAPIKeys(s string) (map[string]string, error) {
	keys := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		k, who, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || k == "" || who == "" || strings.ContainsAny(who, "/ ") {
			return nil, errors.New("GRPCSHOP_API_KEYS: want api-key=customer pairs separated by commas (sk_test_alice=alice)")
		}
		keys[k] = who
	}
	return keys, nil
}

func serve(args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d, err := openDB(start, o.dsn)
	if err != nil {
		return err
	}
	defer d.close()
	p := newCardProvider(o.providerURL, o.timeout)
	defer p.close()
	go d.sweep(ctx, time.Minute)

	lis, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(authenticate(o.apiKeys)))
	shopv1.RegisterCheckoutServiceServer(srv, &checkout{db: d, provider: p, ttl: o.ttl, lease: o.lease, skew: time.Minute, defect: o.defect, recent: map[string][]byte{}})
	reflection.Register(srv)
	go func() {
		<-ctx.Done()
		srv.GracefulStop()
	}()
	slog.Info("grpcshop: listening", "addr", lis.Addr().String(), "defect", string(o.defect))
	return srv.Serve(lis)
}

// customerKey carries the authenticated customer in a call's context.
type customerKey struct{}

func customerOf(ctx context.Context) string {
	who, _ := ctx.Value(customerKey{}).(string)
	return who
}

// authenticate admits a call whose "authorization: Bearer <API key>"
// names a customer (reflection needs none); anything else is
// UNAUTHENTICATED before the handler, and so before any key is looked at.
func authenticate(keys map[string]string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		var who string
		if auth := md.Get("authorization"); len(auth) == 1 {
			if token, ok := strings.CutPrefix(auth[0], "Bearer "); ok {
				who = keys[token]
			}
		}
		if who == "" {
			return nil, status.Error(codes.Unauthenticated, "send authorization: Bearer <API key>")
		}
		return next(context.WithValue(ctx, customerKey{}, who), req)
	}
}

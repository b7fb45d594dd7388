package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// config is how the shop is started.
type config struct {
	dsn             string
	providerURL     string
	ttl             time.Duration // how long a key's outcome is replayed, counted from completion
	lease           time.Duration // how long an in-flight claim holds its key
	providerTimeout time.Duration // the bound on one charge call
	kafkaBrokers    string        // host:port,...: where order.paid events go ("" for none)
	kafkaTopic      string
	defect          defect
}

// check says what is wrong with c, naming the flag or variable.
func (c config) check() error {
	switch {
	case c.dsn == "":
		return errors.New("DATABASE_URL is not set")
	case !validDSN(c.dsn):
		// Not pgx's message: it quotes the URL, password included.
		return errors.New("DATABASE_URL: not a PostgreSQL URL (postgres://user:password@host:5432/db)")
	case c.ttl <= 0:
		return fmt.Errorf("-ttl %s: must be positive", c.ttl)
	case c.providerTimeout <= 0:
		return fmt.Errorf("-provider-timeout %s: must be positive", c.providerTimeout)
	case c.lease <= c.providerTimeout+time.Second:
		// A claim must outlive the longest request it covers, or a retry
		// takes the key over while the charge is still running.
		return fmt.Errorf("-lease %s: must exceed -provider-timeout %s by more than 1s", c.lease, c.providerTimeout)
	}
	if err := checkKafka(c.kafkaBrokers, c.kafkaTopic); err != nil {
		return err
	}
	if c.kafkaBrokers == "" && slices.Contains(eventDefects, c.defect) {
		return fmt.Errorf("SHOP_DEFECT %q: a defect of the events, needs -kafka-brokers", c.defect)
	}
	if u, err := url.Parse(c.providerURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("PROVIDER_URL (-provider-url) %q: want an absolute http(s) URL", c.providerURL)
	}
	return nil
}

func validDSN(dsn string) bool {
	_, err := pgxpool.ParseConfig(dsn)
	return err == nil
}

// open connects to the database, prepares the schema and returns the shop.
func open(ctx context.Context, c config) (*shop, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	st, err := openStore(ctx, c.dsn)
	if err != nil {
		return nil, err
	}
	s := newShop(st, newProvider(c.providerURL, c.providerTimeout), c.ttl, c.lease, c.defect)
	if c.kafkaBrokers != "" {
		if s.events, err = newPublisher(c.kafkaBrokers, c.kafkaTopic); err != nil {
			st.close()
			return nil, err
		}
		rctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.relay(rctx) }()
		s.stopRelay = func() { stop(); <-done }
	}
	return s, nil
}

// close stops the relay, then releases the database pool, the
// provider's connections and the Kafka client.
func (s *shop) close() {
	s.provider.close()
	if s.events != nil {
		s.stopRelay()
		s.events.close()
	}
	s.store.close()
}

// sweep deletes expired records every period until ctx ends.
func (s *shop) sweep(ctx context.Context, period time.Duration) {
	batches(ctx, period, 10*time.Second, 1000, "sweep", func(ctx context.Context) (int, error) {
		n, err := s.store.sweep(ctx, 1000)
		return int(n), err
	})
}

// batches runs step every period until ctx ends, and again at once while a
// step did a whole batch (a backlog), each within timeout; what fails is
// logged under name and retried at the next tick.
func batches(ctx context.Context, period, timeout time.Duration, batch int, name string, step func(context.Context) (int, error)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			sctx, cancel := context.WithTimeout(ctx, timeout)
			n, err := step(sctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				slog.Warn("shop: "+name, "err", err)
			}
			if err != nil || n < batch {
				break
			}
		}
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	c := config{dsn: os.Getenv("DATABASE_URL"), providerURL: os.Getenv("PROVIDER_URL")}
	flag.StringVar(&c.providerURL, "provider-url", c.providerURL, "the payment provider's base URL (default $PROVIDER_URL)")
	flag.DurationVar(&c.ttl, "ttl", 24*time.Hour, "how long a key's outcome is replayed, counted from completion")
	flag.DurationVar(&c.lease, "lease", 5*time.Second, "how long an in-flight request holds its key")
	flag.DurationVar(&c.providerTimeout, "provider-timeout", 3*time.Second, "the bound on one call to the payment provider")
	flag.StringVar(&c.kafkaBrokers, "kafka-brokers", os.Getenv("KAFKA_BROKERS"), "Kafka brokers (host:port,...) for order.paid events; none when empty (default $KAFKA_BROKERS)")
	flag.StringVar(&c.kafkaTopic, "kafka-topic", os.Getenv("KAFKA_TOPIC"), "the topic order.paid events go to (default $KAFKA_TOPIC)")
	flag.Parse()
	d, err := parseDefect(os.Getenv("SHOP_DEFECT"))
	if err == nil {
		c.defect = d
		err = c.check()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	octx, cancel := context.WithTimeout(ctx, 15*time.Second)
	s, err := open(octx, c)
	cancel()
	if err != nil {
		// One line: pgx lists each address it tried on a line of its own.
		fmt.Fprintln(os.Stderr, "shop: DATABASE_URL:", strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(4)
	}
	defer s.close()
	go s.sweep(ctx, min(c.ttl, time.Minute))
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      c.providerTimeout + 15*time.Second,
		IdleTimeout:       60 * time.Second,
	}
	build := "correct"
	if c.defect != "" {
		build = "defect " + string(c.defect)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shop: -addr:", err)
		os.Exit(2)
	}
	slog.Info("shop: listening", "url", "http://"+ln.Addr().String(), "build", build, "ttl", c.ttl, "lease", c.lease)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(1)
	case <-ctx.Done():
	}
	// Requests in flight finish (their charges and records complete)
	// before the database pool closes.
	shutdown, cancel := context.WithTimeout(context.Background(), c.lease)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		slog.Warn("shop: shutdown", "err", err)
	}
}

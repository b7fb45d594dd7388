package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// runCaptured runs the CLI in-process and returns its exit code and stderr.
func runCaptured(t *testing.T, args ...string) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	code := run(args)
	os.Stderr = saved
	w.Close()
	out, _ := io.ReadAll(r)
	r.Close()
	resetFlags(t, args[0])
	return code, string(out)
}

// resetFlags restores a subcommand's flags: cobra keeps parsed values
// between in-process runs.
func resetFlags(t *testing.T, name string) {
	t.Helper()
	cmd, _, err := rootCmd.Find([]string{name})
	if err != nil {
		t.Fatal(err)
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if s, ok := f.Value.(pflag.SliceValue); ok {
			_ = s.Replace(nil)
		} else {
			_ = f.Value.Set(f.DefValue)
		}
		f.Changed = false
	})
}

func TestServeBadFlags(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cases := []struct {
		name, why string
		args      []string
		want      string // substring of the one error line
	}{
		{"ttl-not-a-duration", "unparsable --ttl", []string{"--ttl", "abc"}, `"abc"`},
		{"ttl-zero", "non-positive --ttl", []string{"--ttl", "0s"}, "--ttl 0s"},
		{"lease-negative", "non-positive --lease", []string{"--lease", "-1s"}, "--lease -1s"},
		{"unknown-defect", "a defect outside the catalog", []string{"--defect", "no-expiry,bogus"}, `--defect "bogus"`},
		{"unknown-defect-repeated", "the repeated form is checked like the comma form", []string{"--defect", "no-expiry", "--defect", "bogus"}, `--defect "bogus"`},
		{"fingerprint-header-not-a-name", "a fingerprint header that is no field name", []string{"--fingerprint-header", "Api Version"}, `--fingerprint-header "Api Version"`},
		{"tls-cert-without-key", "half a TLS configuration", []string{"--tls-cert", "cert.pem"}, "--tls-cert and --tls-key"},
		{"h2c-with-tls", "cleartext HTTP/2 asked for with TLS", []string{"--tls-cert", "cert.pem", "--tls-key", "key.pem", "--h2c"}, "--h2c"},
		{"tls-cert-missing", "a certificate file that is not there", []string{"--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem"}, "--tls-cert /nonexistent/cert.pem"},
		{"unknown-store", "a store kind nobody implements", []string{"--store", "floppy"}, `--store "floppy"`},
		{"pg-pool-negative", "a negative PostgreSQL pool size", []string{"--store", "postgres", "--dsn", "postgres://x/y", "--pg-max-conns", "-1"}, "--pg-max-conns -1"},
		{"pg-min-above-max", "more idle connections than the pool holds", []string{"--store", "postgres", "--dsn", "postgres://x/y", "--pg-max-conns", "8", "--pg-min-conns", "9"}, "--pg-min-conns 9"},
		{"port-in-use", "the listener cannot bind", []string{"--addr", busy.Addr().String()}, "--addr " + busy.Addr().String()},
		{"grpc-port-in-use", "the gRPC listener cannot bind", []string{"--addr", "127.0.0.1:0", "--grpc", busy.Addr().String()}, "--grpc " + busy.Addr().String()},
		{"events-scheme", "an events URL of no broker", []string{"--events", "amqp://127.0.0.1:5672/x"}, `--events: scheme "amqp"`},
		{"events-no-topic", "a Kafka URL without its topic", []string{"--events", "kafka://127.0.0.1:9092"}, "--events: want kafka://HOST:PORT/TOPIC"},
		{"events-nats-no-stream", "a NATS URL without its stream", []string{"--events", "nats://127.0.0.1:4222?subject=orders"}, "--events: want nats://HOST:PORT/STREAM?subject=SUBJECT"},
		{"events-nats-unreachable", "a NATS server nobody runs, its password never repeated", []string{"--events", "nats://u:secret@127.0.0.1:1/ORDERS"}, "--events: nats 127.0.0.1:1"},
		{"events-unreachable", "a broker nobody runs", []string{"--events", "redis://127.0.0.1:1/0?stream=s"}, "--events: redis 127.0.0.1:1"},
		{"event-defect-without-events", "an event defect with no events to break", []string{"--defect", "event-on-replay"}, "--defect event-on-replay: needs --events"},
		{"grpc-defect-without-grpc", "a gRPC-only defect with no gRPC service to break", []string{"--defect", "first-sent-ignored"}, "--defect first-sent-ignored: needs --grpc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stderr := runCaptured(t, append([]string{"serve"}, c.args...)...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], c.want) || strings.Contains(stderr, "secret") {
				t.Fatalf("%s: exit %d, stderr %q; want exit 2 and one line containing %q", c.why, code, stderr, c.want)
			}
		})
	}
}

func TestServeListensAndShutsDown(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- runServe(ctx, pw, serveFlags{addr: "127.0.0.1:0", ttl: time.Hour, lease: time.Second, store: "memory", maxBody: 1 << 20})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v (serve: %v)", err, <-errc)
	}
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "idemcheck: listening on ")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || strings.HasSuffix(base, ":0") {
		t.Fatalf("listening line %q", line)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
	tr.CloseIdleConnections()
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not shut down")
	}
}

// serve --events publishes one event per execution to a real Kafka topic
// (in-process kfake): the replay adds none.
func TestServeEvents(t *testing.T) {
	brokers, _ := testenv.RequireKafka(t)
	topic := testenv.KafkaTopic(t, brokers, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- runServe(ctx, pw, serveFlags{addr: "127.0.0.1:0", ttl: time.Hour, lease: time.Second, store: "memory",
			maxBody: 1 << 20, events: "kafka://" + brokers[0] + "/" + topic})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v (serve: %v)", err, <-errc)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	base := strings.TrimPrefix(strings.TrimSpace(line), "idemcheck: listening on ")
	for range 2 {
		if r, err := testenv.Post(base, "/v1/charges", "alice", "serve-events-1", `{"amount":100,"currency":"usd"}`); err != nil || r.Status != http.StatusCreated {
			t.Fatalf("POST: %+v %v", r, err)
		}
	}
	recs := testenv.KafkaSettled(t, brokers, topic, 1)
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if len(recs) != 1 || testenv.KafkaHeader(recs[0], "idempotency-key") != "serve-events-1" {
		t.Fatalf("%d events, want 1 for the key", len(recs))
	}
}

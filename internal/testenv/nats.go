package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Ways of providing NATS besides HowEnv.
const HowEmbedded = "embedded"

var natsStreams atomic.Int64

// RequireNATS returns the URL of a NATS server with JetStream for t:
// IDEMCHECK_NATS_URL (a CI service container), else a nats-server of its
// own embedded in the test binary: the real server, on a free loopback
// port, JetStream storing in a temp dir, shut down (and waited for) when
// t ends. Tests keep apart on a shared server with NATSStream.
func RequireNATS(t testing.TB) (url, how string) {
	t.Helper()
	if v := os.Getenv("IDEMCHECK_NATS_URL"); v != "" {
		return v, HowEnv
	}
	s, err := StartNATS(t.TempDir())
	if err != nil {
		unavailable(t, "nats", err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s.ClientURL(), HowEmbedded
}

// StartNATS starts an embedded nats-server with JetStream storing in dir,
// listening on a free loopback port, and waits until it takes clients.
// The caller shuts it down (Shutdown, then WaitForShutdown).
func StartNATS(dir string) (*server.Server, error) {
	s, err := server.NewServer(&server.Options{
		ServerName: "idemcheck-test",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		NoLog:      true,
		NoSigs:     true,
		JetStream:  true,
		StoreDir:   dir,
		// Bounded: the default takes a share of the machine's memory and disk.
		JetStreamMaxMemory: 64 << 20,
		JetStreamMaxStore:  1 << 30,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded nats-server: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("embedded nats-server: not ready within 10s")
	}
	return s, nil
}

// NATSStream creates a JetStream stream that no other test of this run
// uses, holding the subjects under subject (subject and subject.>), and
// returns both names. It is deleted when t ends.
func NATSStream(t testing.TB, url string) (stream, subject string) {
	t.Helper()
	n := natsStreams.Add(1)
	stream = fmt.Sprintf("IDEMCHECK_T%d_%d", os.Getpid(), n)
	subject = strings.ToLower(stream)
	nc, js := natsJetStream(t, url)
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: stream, Subjects: []string{subject, subject + ".>"}, Storage: jetstream.FileStorage,
	}); err != nil {
		t.Fatalf("create nats stream %s: %v", stream, err)
	}
	t.Cleanup(func() {
		nc, js := natsJetStream(t, url)
		defer nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, stream) // an embedded server may be gone already
	})
	return stream, subject
}

// NATSMessages reads every message the stream holds now, oldest first.
func NATSMessages(t testing.TB, url, stream string) []jetstream.RawStreamMsg {
	t.Helper()
	nc, js := natsJetStream(t, url)
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("nats stream %s: %v", stream, err)
	}
	state := st.CachedInfo().State
	var out []jetstream.RawStreamMsg
	for seq := state.FirstSeq; seq > 0 && seq <= state.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted
		}
		out = append(out, *m)
	}
	return out
}

// natsJetStream connects to url; the caller closes the connection.
func natsJetStream(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("nats %s: %v", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		t.Fatalf("jetstream: %v", err)
	}
	return nc, js
}

package testenv

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// A NATS server from RequireNATS stores a message on a JetStream stream of
// the test's own (the publish is acknowledged by the stream) and gives it
// back with its headers; once shut down, its port no longer answers.
func TestRequireNATSRoundTrip(t *testing.T) {
	var addr string
	t.Run("round trip", func(t *testing.T) {
		u, how := RequireNATS(t)
		stream, subject := NATSStream(t, u)
		nc, js := natsJetStream(t, u)
		defer nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m := nats.NewMsg(subject + ".created")
		m.Data = []byte("hello")
		m.Header.Set("idempotency-key", "k1")
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
		if ack.Stream != stream {
			t.Fatalf("stored in stream %q, want %q", ack.Stream, stream)
		}
		msgs := NATSMessages(t, u, stream)
		if len(msgs) != 1 || string(msgs[0].Data) != "hello" || msgs[0].Header.Get("idempotency-key") != "k1" {
			t.Fatalf("stream holds %+v, want the one message published", msgs)
		}
		t.Logf("nats %s via %s, stream %s", u, how, stream)
		if how == HowEmbedded {
			pu, _ := url.Parse(u)
			addr = pu.Host
		}
	})
	if addr == "" {
		return
	}
	if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		c.Close()
		t.Fatalf("the embedded server still answers on %s after its test ended", addr)
	}
}

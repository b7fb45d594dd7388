package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/outbox"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A nats:// publisher creates its stream when no stream holds the subject,
// publishes each event with the headers and the payload, and refuses a
// subject another stream holds.
func TestNATSPublisher(t *testing.T) {
	url, _ := testenv.RequireNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A name of its own: a shared server (IDEMCHECK_NATS_URL) keeps it.
	name := fmt.Sprintf("CHARGES_%d", time.Now().UnixNano())
	subj := strings.ToLower(name) + ".created"
	pub, err := outbox.Open(ctx, url+"/"+name+"?subject="+subj)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer pub.Close()
	e := reference.Event{ID: "evt_1", Key: "k1", Type: "charge.created", Payload: []byte(`{"id":"evt_1"}`)}
	if err := pub.Publish(ctx, e); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	msgs := testenv.NATSMessages(t, url, name)
	if len(msgs) != 1 {
		t.Fatalf("%d messages in the created stream, want 1", len(msgs))
	}
	m := msgs[0]
	if m.Subject != subj || string(m.Data) != `{"id":"evt_1"}` || m.Header.Get(outbox.HeaderKey) != "k1" ||
		m.Header.Get(outbox.HeaderID) != "evt_1" || m.Header.Get(outbox.HeaderType) != "charge.created" {
		t.Fatalf("message %s %q %v: want the event's subject, payload and headers", m.Subject, m.Data, m.Header)
	}

	stream, subject := testenv.NATSStream(t, url)
	_, err = outbox.Open(ctx, url+"/OTHER?subject="+subject)
	if err == nil || !strings.Contains(err.Error(), "belongs to stream "+stream+", not OTHER") {
		t.Fatalf("Open on a subject of stream %s: %v, want it refused", stream, err)
	}
}

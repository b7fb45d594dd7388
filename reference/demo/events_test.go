package demo

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
	"github.com/idemcheck/idemcheck/reference/outbox"
)

// topic is a Kafka topic of the test's own (kfake in process unless
// IDEMCHECK_KAFKA_BROKERS is set) and a publisher to it.
type topic struct {
	brokers []string
	name    string
	pub     outbox.Publisher
}

func newTopic(t *testing.T) *topic {
	t.Helper()
	brokers, _ := testenv.RequireKafka(t)
	name := testenv.KafkaTopic(t, brokers, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pub, err := outbox.Open(ctx, "kafka://"+brokers[0]+"/"+name)
	if err != nil {
		t.Fatalf("outbox.Open: %v", err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	return &topic{brokers: brokers, name: name, pub: pub}
}

// byKey groups the topic's events by key once it holds at least want.
func (tp *topic) byKey(t *testing.T, want int) map[string][]*kgo.Record {
	t.Helper()
	out := map[string][]*kgo.Record{}
	for _, r := range testenv.KafkaSettled(t, tp.brokers, tp.name, want) {
		k := header(r, outbox.HeaderKey)
		out[k] = append(out[k], r)
	}
	return out
}

var header = testenv.KafkaHeader

func eventsHarness(t *testing.T, tp *topic, store reference.Store, defects ...string) *harness {
	return newHarness(t, Options{Store: store, Events: tp.pub, Defects: defects})
}

// The correct build publishes exactly one event per executed key, through
// the outbox, with its id and type in headers: none for a replay, a
// declined or an invalid request.
func TestOutboxOneEventPerExecution(t *testing.T) {
	tp := newTopic(t)
	store := memstore.New()
	defer store.Close()
	h := eventsHarness(t, tp, store)
	var keys []string
	for range 5 {
		k := newKey()
		keys = append(keys, k)
		if r := h.post("/v1/charges", "alice", k, chargeBody); r.status != http.StatusCreated {
			t.Fatalf("POST: %d %s", r.status, r.body)
		}
		for range 2 {
			if r := h.post("/v1/charges", "alice", k, chargeBody); r.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("retry of %s was not a replay: %d", k, r.status)
			}
		}
	}
	declined, invalid := newKey(), newKey()
	h.post("/v1/charges", "alice", declined, `{"amount":1000,"currency":"usd","fail":"decline"}`)
	h.post("/v1/charges", "alice", invalid, `{"amount":-1,"currency":"usd"}`)
	got := tp.byKey(t, len(keys))
	for _, k := range keys {
		evs := got[k]
		if len(evs) != 1 {
			t.Fatalf("key %s: %d events, want 1", k, len(evs))
		}
		if header(evs[0], outbox.HeaderID) == "" || header(evs[0], outbox.HeaderType) != "charge.created" {
			t.Fatalf("key %s: event headers %v, want an id and the type", k, evs[0].Headers)
		}
	}
	if n := len(got[declined]) + len(got[invalid]); n != 0 {
		t.Fatalf("%d events for a declined and an invalid request, want none", n)
	}
}

// Each event defect the memory store can show produces a wrong count that
// the correct build does not.
func TestOutboxDefects(t *testing.T) {
	t.Run("event-on-replay", func(t *testing.T) {
		for _, defective := range []bool{false, true} {
			tp := newTopic(t)
			store := memstore.New()
			var defects []string
			if defective {
				defects = []string{string(reference.EventOnReplay)}
			}
			h := eventsHarness(t, tp, store, defects...)
			k := newKey()
			for range 3 {
				h.post("/v1/charges", "alice", k, chargeBody)
			}
			want := 1
			if defective {
				want = 3 // the execution and both replays
			}
			if n := len(tp.byKey(t, want)[k]); n != want {
				t.Errorf("defective=%v: %d events for one execution and two replays, want %d", defective, n, want)
			}
			store.Close()
		}
	})
	t.Run("relay-republish", func(t *testing.T) {
		for _, defective := range []bool{false, true} {
			tp := newTopic(t)
			store := memstore.New()
			defer store.Close()
			var defects []string
			if defective {
				defects = []string{string(reference.RelayRepublish)}
			}
			h := eventsHarness(t, tp, store, defects...)
			k := newKey()
			h.post("/v1/charges", "alice", k, chargeBody)
			tp.byKey(t, 1) // sent and marked sent
			// A restart: a second app (and relay) on the same store.
			again, err := New(Options{Store: store, Events: tp.pub, Defects: defects})
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if defective {
				want = 2
			}
			evs := tp.byKey(t, want)[k]
			_ = again.Close()
			if len(evs) != want {
				t.Fatalf("defective=%v: %d events after a relay restart, want %d", defective, len(evs), want)
			}
			if defective && header(evs[1], outbox.HeaderID) != "" {
				t.Fatalf("the republished event kept its id %q: a consumer could dedupe it", header(evs[1], outbox.HeaderID))
			}
		}
	})
}

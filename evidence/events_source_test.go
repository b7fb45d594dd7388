package evidence

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence/events"
	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/idemcheck/idemcheck/internal/testenv"
)

// eventsTarget is a target whose events: section reads a fresh Kafka topic
// (kfake in process), and a function publishing to that topic: an event
// with key in its idempotency-key header and at /ref, and id at /id.
func eventsTarget(t *testing.T, settle time.Duration) (*apispec.Target, func(key, id string)) {
	t.Helper()
	brokers, _ := testenv.RequireKafka(t)
	topic := testenv.KafkaTopic(t, brokers, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	tg := &apispec.Target{BaseURL: "http://127.0.0.1:9", Events: &eventspec.Config{
		Kafka: &eventspec.Kafka{Brokers: brokers, Topic: topic}, Key: eventspec.Key{Header: "idempotency-key"}, EventID: "/id", Settle: settle}}
	publish := func(key, id string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rec := &kgo.Record{Key: []byte(key), Value: fmt.Appendf(nil, `{"id":%q,"ref":%q}`, id, key), Headers: []kgo.RecordHeader{{Key: "idempotency-key", Value: []byte(key)}}}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Errorf("produce: %v", err)
		}
	}
	return tg, publish
}

func openEvidence(t *testing.T, tg *apispec.Target) *Evidence {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ev, err := Open(ctx, tg, http.DefaultClient, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ev.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ev
}

// Without an oracle the events source is the run's oracle: a key's
// executions are its events, each id once; a verdict's line lists them.
func TestEventsAsOracle(t *testing.T) {
	tg, publish := eventsTarget(t, 100*time.Millisecond)
	ev := openEvidence(t, tg)
	if !ev.EventsOnly() || !ev.PerKey() || ev.Events() == nil {
		t.Fatalf("EventsOnly %v PerKey %v: want the events source as the per-key oracle", ev.EventsOnly(), ev.PerKey())
	}
	first := time.Now()
	publish("k1", "evt_1")
	publish("k2", "evt_2")
	publish("k2", "evt_2") // a redelivery: one execution
	publish("k3", "evt_3")
	publish("k3", "evt_4")
	ctx := context.Background()
	for key, want := range map[string]int{"k1": 1, "k2": 1, "k3": 2, "none": 0} {
		if n, err := ev.Count(ctx, key, nil); err != nil || n != want {
			t.Errorf("Count(%s) = %d, %v; want %d", key, n, err, want)
		}
	}
	if _, err := ev.Count(ctx, "", nil); err == nil || !strings.Contains(err.Error(), "without a key") {
		t.Errorf("Count of the keyless requests: %v, want an error saying they carry no key", err)
	}
	if _, ok, err := ev.Total(ctx, nil); ok || err != nil {
		t.Errorf("Total: ok %v err %v; want no total (events count per key)", ok, err)
	}
	s := ev.Events()
	ts, err := s.Settle(ctx, time.Time{}, "k2")
	if err != nil {
		t.Fatal(err)
	}
	lines := s.Lines(ts[0], "key k2", first)
	if len(lines) != 1 || !strings.Contains(lines[0], "kafka topic "+tg.Events.Kafka.Topic+": 2 events for key k2: partition ") ||
		!strings.Contains(lines[0], "id evt_2 (a redelivery)") || !strings.Contains(lines[0], " ms id evt_2, ") {
		t.Errorf("lines %q: want the stream, both events with position, time and id, the second a redelivery", lines)
	}
	if got := s.Lines(events.Tally{Key: "none"}, "key none", first); got != nil {
		t.Errorf("a key without events has lines %q, want none", got)
	}
}

// A count that never settles is an error (the engine's inconclusive),
// naming the key and its events, never a number to judge by.
func TestEventsUnsettledIsAnError(t *testing.T) {
	tg, publish := eventsTarget(t, 100*time.Millisecond)
	ev := openEvidence(t, tg)
	// The key has events before the count starts (a loaded machine may
	// start the publisher late): it never stops changing after.
	publish("busy", "evt_first")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 100 { // bounded: 100 × 25 ms, past the 1 s bound
			select {
			case <-stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
			publish("busy", fmt.Sprintf("evt_%d", i))
		}
	})
	n, err := ev.Count(context.Background(), "busy", nil)
	close(stop)
	wg.Wait()
	if err == nil || !strings.Contains(err.Error(), "key busy still changed") || !strings.Contains(err.Error(), "partition ") {
		t.Fatalf("Count = %d, %v; want an error naming the key and its events", n, err)
	}
}

// Beside an oracle, the events source is not summed into the counts: the
// outbox cases compare the two.
func TestEventsBesideAnOracle(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"executions":1}`)
	}))
	defer srv.Close()
	tg, publish := eventsTarget(t, 50*time.Millisecond)
	tg.BaseURL = srv.URL
	tg.Oracle = &apispec.Oracle{URL: "/e?key={key}", Pointer: "/executions"}
	ev := openEvidence(t, tg)
	if ev.EventsOnly() || ev.Events() == nil {
		t.Fatalf("EventsOnly %v, Events %v: want the events source beside the oracle", ev.EventsOnly(), ev.Events())
	}
	publish("k", "evt_1")
	publish("k", "evt_2")
	if n, err := ev.Count(context.Background(), "k", nil); err != nil || n != 1 {
		t.Fatalf("Count = %d, %v; want the oracle's 1 alone", n, err)
	}
	if n, err := ev.Events().Count(context.Background(), "k", nil); err != nil || n != 2 {
		t.Fatalf("events Count = %d, %v; want 2", n, err)
	}
}

// A broker that is not there fails Open with one line naming the field.
func TestEventsOpenError(t *testing.T) {
	tg := &apispec.Target{Events: &eventspec.Config{Kafka: &eventspec.Kafka{Brokers: []string{"127.0.0.1:9"}, Topic: "t"}, Key: eventspec.Key{Header: "h"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := Open(ctx, tg, http.DefaultClient, nil)
	if err == nil {
		_ = ev.Close()
		t.Fatal("opened events on a closed port")
	}
	if !strings.HasPrefix(err.Error(), "events.kafka.brokers") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q: want one line naming events.kafka.brokers", err)
	}
	nats := &apispec.Target{Events: &eventspec.Config{NATS: &eventspec.NATS{URL: "nats://u:secret@127.0.0.1:9", Stream: "S"}, Key: eventspec.Key{Header: "h"}}}
	if _, err := Open(ctx, nats, http.DefaultClient, nil); err == nil || !strings.HasPrefix(err.Error(), "events.nats.url 127.0.0.1:9: ") ||
		strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("nats: %v; want one line naming events.nats.url without its password", err)
	}
}

// Without a double, an operation's marker is written into each key's
// requests for the events source alone, and an event that carries a key's
// token (not the key) is that key's: attributed by marker.
func TestEventsByMarkerWithoutADouble(t *testing.T) {
	tg, publish := eventsTarget(t, 50*time.Millisecond)
	tg.Events.Key = eventspec.Key{Pointer: "/ref"}
	tg.Operations = []apispec.Operation{{Name: "orders", Method: http.MethodPost, Path: "/orders",
		Body: []byte(`{"sku":"a","reference":""}`), Marker: &apispec.Marker{Pointer: "/reference"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := StartDownstream(ctx, tg)
	if err != nil || d == nil || d.URL() != "" {
		t.Fatalf("StartDownstream: %v, %v; want one that only marks (no double, no URL)", d, err)
	}
	defer d.Close()
	ev, err := Open(ctx, tg, http.DefaultClient, d)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	op := &tg.Operations[0]
	_, body := d.Mark(op, "k1", tg.BaseURL+op.Path, http.Header{}, op.Body)
	tok := d.Token("k1")
	if tok == "" || !strings.Contains(string(body), `"reference":"`+tok+`"`) {
		t.Fatalf("marked body %s: want k1's token %q at /reference", body, tok)
	}
	// The API copies the reference it was sent into its event (/ref), not
	// the key.
	publish(tok, "evt_1")
	publish("k2", "evt_2")
	for key, want := range map[string]int{"k1": 1, "k2": 1, tok: 1, "k3": 0} {
		if n, err := ev.Count(ctx, key, nil); err != nil || n != want {
			t.Errorf("Count(%s) = %d, %v; want %d", key, n, err, want)
		}
	}
	ts, err := ev.Events().Settle(ctx, time.Time{}, "k1")
	if err != nil || len(ts[0].Events) != 1 || ts[0].Events[0].Key != "k1" {
		t.Fatalf("k1's tally %+v (%v): want its one event, attributed to k1", ts, err)
	}
}

package events_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/idemcheck/idemcheck/evidence/events"
	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/idemcheck/idemcheck/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// broker is one real broker under test: it fills a config's broker part
// and publishes raw events to the stream that config names.
type broker struct {
	name    string
	config  func(*eventspec.Config)
	publish func(t *testing.T, headers map[string]string, payload string)
}

func kafkaBroker(t *testing.T, partitions int32) broker {
	brokers, _ := testenv.RequireKafka(t)
	return kafkaBrokerOn(t, brokers, partitions)
}

// kafkaBrokerOn publishes to a topic of the test's own on brokers.
func kafkaBrokerOn(t *testing.T, brokers []string, partitions int32) broker {
	topic := testenv.KafkaTopic(t, brokers, partitions)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	n := 0
	return broker{
		name:   "kafka",
		config: func(c *eventspec.Config) { c.Kafka = &eventspec.Kafka{Brokers: brokers, Topic: topic} },
		publish: func(t *testing.T, headers map[string]string, payload string) {
			t.Helper()
			n++ // a record key of its own spreads the events over the partitions
			rec := &kgo.Record{Key: fmt.Appendf(nil, "k%d", n), Value: []byte(payload)}
			for k, v := range headers {
				rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
			}
		},
	}
}

func redisBroker(t *testing.T) broker {
	url := testenv.RequireRedis(t)
	stream := testenv.KeyPrefix(t) + "events"
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	return broker{
		name:   "redis",
		config: func(c *eventspec.Config) { c.Redis = &eventspec.Redis{URL: url, Stream: stream} },
		publish: func(t *testing.T, headers map[string]string, payload string) {
			t.Helper()
			values := []any{"payload", payload}
			for k, v := range headers {
				values = append(values, k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: values}).Err(); err != nil {
				t.Errorf("xadd: %v", err)
			}
		},
	}
}

// natsBroker publishes to a JetStream stream of the test's own, on a
// subject under the stream's; with filter, the reader reads that subject
// alone and the broker publishes one message of another subject of the
// stream before each event, which the reader must skip.
func natsBroker(t *testing.T, filter bool) broker {
	url, _ := testenv.RequireNATS(t)
	stream, subject := testenv.NATSStream(t, url)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	read := ""
	if filter {
		read = subject + ".created"
	}
	return broker{
		name:   "nats",
		config: func(c *eventspec.Config) { c.NATS = &eventspec.NATS{URL: url, Stream: stream, Subject: read} },
		publish: func(t *testing.T, headers map[string]string, payload string) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if filter {
				other := nats.NewMsg(subject + ".other")
				other.Data = []byte(payload)
				for k, v := range headers {
					other.Header.Set(k, v)
				}
				if _, err := js.PublishMsg(ctx, other); err != nil {
					t.Errorf("publish: %v", err)
				}
			}
			m := nats.NewMsg(subject + ".created")
			m.Data = []byte(payload)
			for k, v := range headers {
				m.Header.Set(k, v)
			}
			if _, err := js.PublishMsg(ctx, m); err != nil {
				t.Errorf("publish: %v", err)
			}
		},
	}
}

// eachBroker runs f against every broker: Kafka twice, kfake in process
// and Redpanda through testcontainers (skipped at once without Docker).
func eachBroker(t *testing.T, f func(t *testing.T, b broker)) {
	t.Run("kafka", func(t *testing.T) { f(t, kafkaBroker(t, 3)) })
	t.Run("redpanda", func(t *testing.T) { f(t, kafkaBrokerOn(t, testenv.RequireRedpanda(t), 3)) })
	t.Run("redis", func(t *testing.T) { f(t, redisBroker(t)) })
	t.Run("nats", func(t *testing.T) { f(t, natsBroker(t, false)) })
	t.Run("nats subject", func(t *testing.T) { f(t, natsBroker(t, true)) })
}

func open(t *testing.T, b broker, c eventspec.Config, opts ...events.Option) *events.Reader {
	t.Helper()
	b.config(&c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := events.Open(ctx, c, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

func count(t *testing.T, r *events.Reader, key string) (int, []events.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, evs, err := r.Count(ctx, key)
	if err != nil {
		t.Fatalf("Count(%s): %v", key, err)
	}
	return n, evs
}

func hdr(key string) map[string]string { return map[string]string{"idempotency-key": key} }

// Events published before Open are not read; every one after it is, by
// key, whichever partition it went to.
func TestStartPosition(t *testing.T) {
	eachBroker(t, func(t *testing.T, b broker) {
		for range 3 {
			b.publish(t, hdr("a"), `{}`)
		}
		r := open(t, b, eventspec.Config{Key: eventspec.Key{Header: "idempotency-key"}})
		if n, _ := count(t, r, "a"); n != 0 {
			t.Fatalf("key a: %d executions right after Open, want 0 (the 3 older events are before the start)", n)
		}
		for range 4 {
			b.publish(t, hdr("a"), `{}`)
		}
		b.publish(t, hdr("b"), `{}`)
		if n, evs := count(t, r, "a"); n != 4 || len(evs) != 4 {
			t.Fatalf("key a: %d executions, %d events, want 4 and 4", n, len(evs))
		}
		n, evs := count(t, r, "b")
		if n != 1 || evs[0].Position == "" || evs[0].Time.IsZero() || evs[0].Key != "b" {
			t.Fatalf("key b: %d executions, events %+v; want 1 with a position and a time", n, evs)
		}
	})
}

// A header is matched whatever its case; an event without it is counted
// as read but attributed to no key, and Stats says why.
func TestAttributionByHeader(t *testing.T) {
	eachBroker(t, func(t *testing.T, b broker) {
		r := open(t, b, eventspec.Config{Key: eventspec.Key{Header: "Idempotency-Key"}})
		b.publish(t, map[string]string{"idempotency-key": "k1"}, `{}`)
		b.publish(t, map[string]string{"other": "k1"}, `{}`)
		if n, _ := count(t, r, "k1"); n != 1 {
			t.Fatalf("k1: %d executions, want 1", n)
		}
		st, err := r.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Read != 2 || st.Unattributed != 1 || !strings.Contains(st.WhyUnattributed, "no header Idempotency-Key") {
			t.Fatalf("stats %+v: want 2 read, 1 unattributed for want of the header", st)
		}
	})
}

// A pointer reads the key from the JSON payload: strings and numbers; a
// payload that is not JSON or lacks the member is unattributed.
func TestAttributionByPointer(t *testing.T) {
	eachBroker(t, func(t *testing.T, b broker) {
		r := open(t, b, eventspec.Config{Key: eventspec.Key{Pointer: "/data/reference"}})
		b.publish(t, nil, `{"data":{"reference":"order-7"}}`)
		b.publish(t, nil, `{"data":{"reference":42}}`)
		b.publish(t, nil, `{"data":{}}`)
		b.publish(t, nil, `not json`)
		if n, _ := count(t, r, "order-7"); n != 1 {
			t.Fatalf("order-7: %d executions, want 1", n)
		}
		if n, _ := count(t, r, "42"); n != 1 {
			t.Fatalf("42: %d executions, want 1 (a number is its text)", n)
		}
		st, _ := r.Stats(context.Background())
		if st.Read != 4 || st.Unattributed != 2 || !strings.Contains(st.WhyUnattributed, "nothing at /data/reference") {
			t.Fatalf("stats %+v: want 4 read, 2 unattributed", st)
		}
	})
}

// With a marker, an event that names a key's marker token is that key's,
// beside those that name the key itself; an id seen under both is one execution delivered twice, and a token of no key
// counts for nobody.
func TestAttributionByMarker(t *testing.T) {
	eachBroker(t, func(t *testing.T, b broker) {
		token := func(k string) string { return "ref_" + k }
		r := open(t, b, eventspec.Config{Key: eventspec.Key{Pointer: "/data/reference"}, EventID: "/id", Settle: 50 * time.Millisecond}, events.WithMarker(token))
		b.publish(t, nil, `{"id":"e1","data":{"reference":"ref_k"}}`)
		b.publish(t, nil, `{"id":"e2","data":{"reference":"k"}}`)
		b.publish(t, nil, `{"id":"e2","data":{"reference":"ref_k"}}`)
		b.publish(t, nil, `{"id":"e3","data":{"reference":"ref_j"}}`)
		b.publish(t, nil, `{"id":"e4","data":{"reference":"ref_nobody"}}`)
		ts, err := r.Settle(context.Background(), time.Time{}, "k", "j", "nobody-else")
		if err != nil {
			t.Fatal(err)
		}
		k := ts[0]
		if k.Executions != 2 || k.Redeliveries != 1 || len(k.Events) != 3 {
			t.Fatalf("k: %+v; want e1 and e2 (by token and by key), e2 again a redelivery", k)
		}
		// Read order across Kafka partitions is not publish order: which
		// e2 is the redelivery is the reader's to say.
		ids := map[string]int{}
		for _, e := range k.Events {
			ids[e.ID]++
			if e.Key != "k" || e.Redelivery != (e.ID == "e2" && ids["e2"] == 2) {
				t.Fatalf("k's events %+v: want each attributed to k, the second e2 read a redelivery", k.Events)
			}
		}
		if ids["e1"] != 1 || ids["e2"] != 2 {
			t.Fatalf("k's events %+v: want e1 once and e2 twice", k.Events)
		}
		if j := ts[1]; j.Executions != 1 || j.Events[0].Key != "j" {
			t.Fatalf("j: %+v; want its one event, by its token", j)
		}
		if n := ts[2].Executions; n != 0 {
			t.Fatalf("nobody-else: %d executions, want 0", n)
		}
	})
}

// Two deliveries of one event id are one execution, the second listed as
// a redelivery; distinct ids are distinct executions, and an event that
// lacks an id counts on its own.
func TestEventIDDedupe(t *testing.T) {
	eachBroker(t, func(t *testing.T, b broker) {
		r := open(t, b, eventspec.Config{Key: eventspec.Key{Header: "idempotency-key"}, EventID: "/id", Settle: 50 * time.Millisecond})
		b.publish(t, hdr("k"), `{"id":"evt_1"}`)
		b.publish(t, hdr("k"), `{"id":"evt_1"}`)
		b.publish(t, hdr("j"), `{"id":"evt_2"}`)
		b.publish(t, hdr("j"), `{"id":"evt_3"}`)
		b.publish(t, hdr("j"), `{}`)
		ts, err := r.Settle(context.Background(), time.Time{}, "k", "j")
		if err != nil {
			t.Fatal(err)
		}
		k, j := ts[0], ts[1]
		if k.Executions != 1 || k.Redeliveries != 1 || len(k.Events) != 2 || k.Events[0].ID != "evt_1" || k.Events[0].Redelivery || !k.Events[1].Redelivery {
			t.Fatalf("k: %+v; want 1 execution delivered twice", k)
		}
		if j.Executions != 3 || j.Redeliveries != 0 {
			t.Fatalf("j: %+v; want 3 executions (two ids and one event without)", j)
		}
	})
}

// A relay that publishes late is waited for: Settle returns once the count
// has been unchanged for the settle time, with the late event in it.
func TestSettleWaitsForLateEvents(t *testing.T) {
	eachBroker(t, func(t *testing.T, b broker) {
		r := open(t, b, eventspec.Config{Key: eventspec.Key{Header: "idempotency-key"}, Settle: 600 * time.Millisecond})
		b.publish(t, hdr("late"), `{}`)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(250 * time.Millisecond)
			b.publish(t, hdr("late"), `{}`)
		}()
		defer wg.Wait()
		start := time.Now()
		ts, err := r.Settle(context.Background(), start, "late", "none")
		if err != nil {
			t.Fatal(err)
		}
		if ts[0].Executions != 2 || !ts[0].Settled {
			t.Fatalf("late: %+v; want 2 executions, settled", ts[0])
		}
		if ts[1].Executions != 0 || !ts[1].Settled {
			t.Fatalf("none: %+v; want 0 executions, settled", ts[1])
		}
		if d := time.Since(start); d < 850*time.Millisecond {
			t.Fatalf("settled after %s: the late event came at 250ms, so not before 850ms", d)
		}
	})
}

// A key that keeps publishing never settles: Settle gives up at its bound
// (ten settle times) and says so, and a quiet key beside it is settled.
func TestSettleUnsettled(t *testing.T) {
	eachBroker(t, func(t *testing.T, b broker) {
		r := open(t, b, eventspec.Config{Key: eventspec.Key{Header: "idempotency-key"}, Settle: 150 * time.Millisecond})
		b.publish(t, hdr("quiet"), `{}`)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ { // bounded: 200 × 30 ms, well past the 1.5 s bound
				select {
				case <-stop:
					return
				case <-time.After(30 * time.Millisecond):
				}
				b.publish(t, hdr("busy"), `{}`)
			}
		}()
		start := time.Now()
		ts, err := r.Settle(context.Background(), time.Time{}, "busy", "quiet")
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if ts[0].Settled || ts[0].Executions == 0 {
			t.Fatalf("busy: %+v; want unsettled with events", ts[0])
		}
		if !ts[1].Settled || ts[1].Executions != 1 {
			t.Fatalf("quiet: %+v; want 1 execution, settled", ts[1])
		}
		if d := time.Since(start); d < 1500*time.Millisecond || d > 10*time.Second {
			t.Fatalf("gave up after %s, want about the 1.5s bound", d)
		}
	})
}

// Records of an aborted transaction are no events, and the markers that
// transactions leave in the log do not stall the reader below the head.
func TestKafkaTransactions(t *testing.T) {
	brokers, _ := testenv.RequireKafka(t)
	topic := testenv.KafkaTopic(t, brokers, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.TransactionalID("idemcheck-test-"+topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r := open(t, broker{config: func(c *eventspec.Config) { c.Kafka = &eventspec.Kafka{Brokers: brokers, Topic: topic} }},
		eventspec.Config{Key: eventspec.Key{Header: "idempotency-key"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, commit := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		rec := &kgo.Record{Value: []byte(`{}`), Headers: []kgo.RecordHeader{{Key: "idempotency-key", Value: []byte("tx")}}}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	if n, evs := count(t, r, "tx"); n != 1 {
		t.Fatalf("tx: %d executions (%+v), want 1: the aborted record is no event", n, evs)
	}
}

// Open fails with one line naming the field at fault.
func TestOpenErrors(t *testing.T) {
	brokers, _ := testenv.RequireKafka(t)
	url := testenv.RequireRedis(t)
	natsURL, _ := testenv.RequireNATS(t)
	stream, _ := testenv.NATSStream(t, natsURL)
	key := testenv.KeyPrefix(t) + "string"
	opts, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.Set(context.Background(), key, "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  eventspec.Config
		want string
	}{
		{eventspec.Config{Kafka: &eventspec.Kafka{Brokers: brokers, Topic: "no-such-topic"}, Key: eventspec.Key{Header: "h"}}, `events.kafka.topic "no-such-topic": no such topic`},
		{eventspec.Config{Redis: &eventspec.Redis{URL: url, Stream: key}, Key: eventspec.Key{Header: "h"}}, "the key holds a string, not a stream"},
		{eventspec.Config{Redis: &eventspec.Redis{URL: "redis://127.0.0.1:1/0", Stream: "s"}, Key: eventspec.Key{Header: "h"}}, "events.redis.url 127.0.0.1:1:"},
		{eventspec.Config{NATS: &eventspec.NATS{URL: natsURL, Stream: "NO_SUCH"}, Key: eventspec.Key{Header: "h"}}, `events.nats.stream "NO_SUCH": no such stream on 127.0.0.1:`},
		{eventspec.Config{NATS: &eventspec.NATS{URL: natsURL, Stream: stream, Subject: "elsewhere.>"}, Key: eventspec.Key{Header: "h"}}, `events.nats.subject "elsewhere.>": `},
		{eventspec.Config{NATS: &eventspec.NATS{URL: "nats://user:secret@127.0.0.1:1", Stream: "s"}, Key: eventspec.Key{Header: "h"}}, "events.nats.url 127.0.0.1:1:"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r, err := events.Open(ctx, tc.cfg)
		cancel()
		if err == nil {
			r.Close()
			t.Errorf("%s: opened, want an error", tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "secret") {
			t.Errorf("error %q, want one line with %q", err, tc.want)
		}
	}
}

// A NATS catch-up reads past its fetch batch (more events than one fetch
// takes, most of another subject the filter skips) and leaves no consumer
// behind on the server: each catch-up's own is deleted after it.
func TestNATSManyEventsNoConsumerLeft(t *testing.T) {
	b := natsBroker(t, true)
	r := open(t, b, eventspec.Config{Key: eventspec.Key{Header: "idempotency-key"}})
	for i := range 300 {
		b.publish(t, hdr(fmt.Sprintf("k%d", i%2)), `{}`)
	}
	if n, _ := count(t, r, "k0"); n != 150 {
		t.Fatalf("k0: %d executions, want 150", n)
	}
	b.publish(t, hdr("k1"), `{}`)
	if n, evs := count(t, r, "k1"); n != 151 || evs[150].Position <= evs[149].Position {
		t.Fatalf("k1: %d executions, want 151 in stream order", n)
	}
	st, _ := r.Stats(context.Background())
	if st.Read != 301 || st.Unattributed != 0 {
		t.Fatalf("stats %+v: want the 301 events of the filtered subject, the 301 others skipped", st)
	}
	var c eventspec.Config
	b.config(&c)
	nc, err := nats.Connect(c.NATS.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := js.Stream(ctx, c.NATS.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if n := info.CachedInfo().State.Consumers; n != 0 {
		t.Fatalf("%d consumers left on the stream after the catch-ups, want 0", n)
	}
}

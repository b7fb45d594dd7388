package scenarios_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/outbox"
	"github.com/idemcheck/idemcheck/reference/pgstore"
	"github.com/idemcheck/idemcheck/scenarios"
)

// outboxSettle is the events' settle time in these tests: the reference's
// relay polls every 50 ms, but publishes one event at a time, which a
// whole catalog under -race on a loaded machine slows to seconds behind
// (a key short of its event is waited for ten settle times).
const outboxSettle = time.Second

// eventsDemo is the reference publishing through its outbox to a Kafka
// topic of its own (kfake in process, or IDEMCHECK_KAFKA_BROKERS), with
// store (nil: memory) and lease, and its Target with events: reading that
// topic by the idempotency-key header and the payload's /id.
func eventsDemo(t testing.TB, store reference.Store, lease time.Duration, defects ...string) *apispec.Target {
	t.Helper()
	brokers, _ := testenv.RequireKafka(t)
	topic := testenv.KafkaTopic(t, brokers, 2)
	return eventsDemoOn(t, "kafka://"+strings.Join(brokers, ",")+"/"+topic,
		&eventspec.Config{Kafka: &eventspec.Kafka{Brokers: brokers, Topic: topic}}, store, lease, defects...)
}

// eventsDemoRedis is eventsDemo publishing to a Redis stream of its own.
func eventsDemoRedis(t testing.TB, defects ...string) *apispec.Target {
	t.Helper()
	url := testenv.RequireRedis(t)
	stream := testenv.KeyPrefix(t) + "events"
	return eventsDemoOn(t, url+"?stream="+stream, &eventspec.Config{Redis: &eventspec.Redis{URL: url, Stream: stream}}, nil, demoLease, defects...)
}

// eventsDemoNATS is eventsDemo publishing to a JetStream stream of its
// own (nats-server embedded in the test binary, or IDEMCHECK_NATS_URL),
// on a subject under the stream's that the reader filters on.
func eventsDemoNATS(t testing.TB, defects ...string) *apispec.Target {
	t.Helper()
	url, _ := testenv.RequireNATS(t)
	stream, subject := testenv.NATSStream(t, url)
	subject += ".charges"
	return eventsDemoOn(t, url+"/"+stream+"?subject="+subject,
		&eventspec.Config{NATS: &eventspec.NATS{URL: url, Stream: stream, Subject: subject}}, nil, demoLease, defects...)
}

// eventsDemoOn serves the reference publishing to the broker at pubURL,
// its Target reading the stream cfg names.
func eventsDemoOn(t testing.TB, pubURL string, cfg *eventspec.Config, store reference.Store, lease time.Duration, defects ...string) *apispec.Target {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pub, err := outbox.Open(ctx, pubURL)
	if err != nil {
		t.Fatal(err)
	}
	opts := demo.Options{TTL: demoTTL, Lease: lease, Defects: defects, Events: pub, Store: store}
	if s, ok := store.(*pgstore.Store); ok {
		opts.Ledger = pgstore.NewLedger(s) // charges commit with their record
	}
	app, err := demo.New(opts)
	if err != nil {
		t.Fatalf("demo.New(%v): %v", defects, err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(func() {
		srv.Close()
		_ = app.Close()
		_ = pub.Close()
	})
	tg, err := apispec.FromURL(srv.URL, demoTTL, lease)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Key, cfg.EventID, cfg.ResourceID, cfg.Settle = eventspec.Key{Header: outbox.HeaderKey}, "/id", "/data/id", outboxSettle
	tg.Events = cfg
	return tg
}

func runOutbox(t *testing.T, tg *apispec.Target, globs ...string) *scenarios.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, referenceProfile(t), scenarios.RunOptions{Run: globs})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// failing lists the outbox/ case IDs that failed, and logs every result.
func failing(t *testing.T, rep *scenarios.Report) []string {
	t.Helper()
	var out []string
	for _, r := range rep.Results {
		t.Logf("%s: %s %s%s | %s", r.Name(), r.Status, r.Observed, r.Reason, strings.Join(r.Events, " | "))
		if r.Status == scenarios.Fail && !slices.Contains(out, r.ID) {
			out = append(out, r.ID)
		}
	}
	slices.Sort(out)
	return out
}

// The correct reference passes every outbox case, beside the oracle and
// with the events as the only oracle; each verdict lists the key's events.
func TestOutboxCorrectReference(t *testing.T) {
	t.Parallel() // waits on slow variants, TTLs or a broker: overlaps the rest
	t.Run("beside the oracle", func(t *testing.T) {
		rep := runOutbox(t, eventsDemo(t, nil, demoLease), "outbox/**")
		for _, r := range rep.Results {
			switch {
			case r.ID == "outbox/lease-takeover":
				if r.Status != scenarios.Skip {
					t.Errorf("%s: %s, want skipped (the 1.5 s slow variant is within the 5 s lease)", r.Name(), r.Status)
				}
			case r.Status != scenarios.Pass:
				t.Errorf("%s: %s: %s %s", r.Name(), r.Status, r.Observed, r.Reason)
			case r.ID != "outbox/none-for-rejected" && r.ID != "outbox/none-for-failed" && r.ID != "outbox/none-for-declined" && (len(r.Events) == 0 || !strings.Contains(r.Events[0], "partition ")):
				t.Errorf("%s: events %q, want the key's events listed with their positions", r.Name(), r.Events)
			}
		}
		if len(rep.Results) != 24 {
			t.Errorf("%d results, want the 12 outbox cases on 2 operations", len(rep.Results))
		}
	})
	t.Run("as the oracle", func(t *testing.T) {
		tg := eventsDemo(t, nil, demoLease)
		tg.Oracle = nil
		rep := runOutbox(t, tg, "outbox/**", "replay/single-execution", "lost/dropped-response-retry", "lost/client-hangup")
		if got := failing(t, rep); len(got) > 0 {
			t.Errorf("failed: %v", got)
		}
		for _, r := range rep.Results {
			if r.Status != scenarios.Pass && r.ID != "outbox/lease-takeover" {
				t.Errorf("%s: %s: %s", r.Name(), r.Status, r.Reason)
			}
		}
	})
}

// On a Redis stream and a NATS JetStream stream as on Kafka: the correct
// reference passes the outbox cases (on NATS all of them), event-on-replay
// fails them.
func TestOutboxRedisAndNATS(t *testing.T) {
	t.Parallel() // waits on slow variants, TTLs or a broker: overlaps the rest
	for _, b := range []struct {
		name  string
		demo  func(testing.TB, ...string) *apispec.Target
		cases []string
	}{
		{"redis", eventsDemoRedis, []string{"outbox/one-per-execution", "outbox/none-for-replay"}},
		{"nats", eventsDemoNATS, []string{"outbox/**"}},
	} {
		for _, defect := range []string{"", string(reference.EventOnReplay)} {
			t.Run(b.name+" defect="+defect, func(t *testing.T) {
				cases := b.cases
				var defects []string
				if defect != "" {
					defects = []string{defect}
					cases = []string{"outbox/one-per-execution", "outbox/none-for-replay"}
				}
				rep := runOutbox(t, b.demo(t, defects...), cases...)
				got := failing(t, rep)
				for _, r := range rep.Results {
					// lease-takeover is skipped: the slow variant is within the lease.
					if defect == "" && r.Status != scenarios.Pass && r.ID != "outbox/lease-takeover" {
						t.Errorf("%s: %s: %s", r.Name(), r.Status, r.Reason)
					}
				}
				switch {
				case defect == "" && len(got) > 0:
					t.Errorf("the correct reference fails %v", got)
				case defect != "" && !slices.Equal(got, []string{"outbox/none-for-replay"}):
					t.Errorf("caught by %v, want [outbox/none-for-replay]", got)
				}
			})
		}
	}
}

// A wrong topic is found at the start: one note line says no event
// arrived, and the outbox cases are inconclusive, never failed.
func TestOutboxWrongTopic(t *testing.T) {
	t.Parallel() // waits on slow variants, TTLs or a broker: overlaps the rest
	tg := eventsDemo(t, nil, demoLease)
	tg.Events.Kafka.Topic = testenv.KafkaTopic(t, tg.Events.Kafka.Brokers, 1) // a topic the API does not publish to
	rep := runOutbox(t, tg, "outbox/one-per-execution")
	if len(rep.Notes) == 0 || !strings.Contains(strings.Join(rep.Notes, "\n"), "no event at all reached kafka topic") {
		t.Errorf("notes %q: want one saying no event reached the topic", rep.Notes)
	}
	for _, r := range rep.Results {
		if r.Status != scenarios.Inconclusive {
			t.Errorf("%s: %s, want inconclusive", r.Name(), r.Status)
		}
	}
}

// Each event defect the in-process reference can show is caught by the
// outbox cases: event-on-replay on the memory store, event-outside-tx on
// PostgreSQL (whose charges roll back with their record) when a retry
// takes over a lease. relay-republish needs a restart: cmd/idemcheck
// TestChaosEventsKills.
func TestOutboxDefectsCaught(t *testing.T) {
	t.Run("event-on-replay", func(t *testing.T) {
		rep := runOutbox(t, eventsDemo(t, nil, demoLease, string(reference.EventOnReplay)), "outbox/**")
		got := failing(t, rep)
		for _, want := range []string{"outbox/lost-answer-retry", "outbox/none-for-replay"} {
			if !slices.Contains(got, want) {
				t.Errorf("caught by %v, want %s among them", got, want)
			}
		}
	})
	for _, tc := range []struct {
		defect reference.Defect
		want   string
	}{
		{reference.EventForDecline, "outbox/none-for-declined"},
		{reference.StaleIDAfterExpiry, "outbox/fresh-id-after-expiry"},
	} {
		t.Run(string(tc.defect), func(t *testing.T) {
			rep := runOutbox(t, eventsDemo(t, nil, demoLease, string(tc.defect)), "outbox/**@charges")
			if got := failing(t, rep); !slices.Equal(got, []string{tc.want}) {
				t.Errorf("caught by %v, want [%s]", got, tc.want)
			}
		})
	}
	dsn := testenv.RequirePostgres(t)
	for _, defect := range []string{"", string(reference.EventOutsideTx)} {
		t.Run("postgres "+defect, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := pgstore.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var defects []string
			if defect != "" {
				defects = []string{defect}
			}
			// A lease shorter than the 1.5 s slow variant: the retry takes over.
			rep := runOutbox(t, eventsDemo(t, s, 500*time.Millisecond, defects...), "outbox/lease-takeover@charges", "outbox/one-per-execution@charges")
			got := failing(t, rep)
			switch {
			case defect == "" && len(got) > 0:
				t.Errorf("the correct reference on PostgreSQL fails %v", got)
			case defect != "" && !slices.Equal(got, []string{"outbox/lease-takeover"}):
				t.Errorf("caught by %v, want [outbox/lease-takeover]", got)
			}
			for _, r := range rep.Results {
				if defect == "" && r.Status != scenarios.Pass {
					t.Errorf("%s: %s: %s", r.Name(), r.Status, r.Reason)
				}
			}
		})
	}
}

// An API that names an event's key by the marker token idemcheck wrote
// into the request (the charge's description, copied into the event's
// data), not by the key: with marker: on the operations and events.key at
// that member, each event is its key's — no double runs — so the correct
// reference passes the outbox cases with the events as the only oracle,
// and event-on-replay is caught.
func TestOutboxByMarker(t *testing.T) {
	for _, defect := range []string{"", string(reference.EventOnReplay)} {
		t.Run("defect="+defect, func(t *testing.T) {
			var defects []string
			if defect != "" {
				defects = []string{defect}
			}
			tg := eventsDemo(t, nil, demoLease, defects...)
			tg.Oracle = nil
			tg.Events.Key = eventspec.Key{Pointer: "/data/description"}
			for i := range tg.Operations {
				tg.Operations[i].Marker = &apispec.Marker{Pointer: "/description"}
			}
			rep := runOutbox(t, tg, "outbox/one-per-execution", "outbox/none-for-replay", "outbox/none-for-mismatch")
			got := failing(t, rep)
			if len(rep.Notes) > 0 {
				t.Errorf("notes %q: want none (the start check attributes the event by its marker)", rep.Notes)
			}
			for _, r := range rep.Results {
				if defect == "" && r.Status != scenarios.Pass {
					t.Errorf("%s: %s: %s", r.Name(), r.Status, r.Reason)
				}
			}
			switch {
			case defect == "" && len(got) > 0:
				t.Errorf("the correct reference fails %v", got)
			case defect != "" && !slices.Equal(got, []string{"outbox/none-for-replay"}):
				t.Errorf("caught by %v, want [outbox/none-for-replay]", got)
			}
		})
	}
}

// outbox/none-for-failed on the reference, whose transient_error is a body
// patch answered 503 before anything is charged: the correct reference
// passes it, and so does event-outside-tx, whose handler publishes only
// after the charge that this failure never reaches (a failed charge cannot
// expose it; outbox/lease-takeover does, TestOutboxDefectsCaught). An API
// that announces each request before executing it (the reference without
// events, behind a handler that publishes first) fails it on both
// operations, while one-per-execution passes it.
func TestOutboxNoneForFailed(t *testing.T) {
	for _, defect := range []string{"", string(reference.EventOutsideTx)} {
		t.Run("defect="+defect, func(t *testing.T) {
			var defects []string
			if defect != "" {
				defects = []string{defect}
			}
			rep := runOutbox(t, eventsDemo(t, nil, demoLease, defects...), "outbox/none-for-failed")
			if got := failing(t, rep); len(got) > 0 {
				t.Errorf("failed: %v", got)
			}
			for _, r := range rep.Results {
				if r.Status != scenarios.Pass {
					t.Errorf("%s: %s: %s", r.Name(), r.Status, r.Reason)
				}
			}
			if len(rep.Results) != 2 {
				t.Errorf("%d results, want outbox/none-for-failed on 2 operations", len(rep.Results))
			}
		})
	}
	t.Run("publish before executing", func(t *testing.T) {
		brokers, _ := testenv.RequireKafka(t)
		topic := testenv.KafkaTopic(t, brokers, 2)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		pub, err := outbox.Open(ctx, "kafka://"+strings.Join(brokers, ",")+"/"+topic)
		if err != nil {
			t.Fatal(err)
		}
		app, err := demo.New(demo.Options{TTL: demoTTL, Lease: demoLease})
		if err != nil {
			t.Fatal(err)
		}
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if k := strings.Trim(r.Header.Get("Idempotency-Key"), `"`); r.Method == http.MethodPost && k != "" {
				id := fmt.Sprintf("evt_%d", n.Add(1))
				if err := pub.Publish(r.Context(), reference.Event{ID: id, Key: k, Type: "charge.announced", Payload: []byte(`{"id":"` + id + `"}`)}); err != nil {
					t.Errorf("publish: %v", err)
				}
			}
			app.ServeHTTP(w, r)
		}))
		t.Cleanup(func() {
			srv.Close()
			_ = app.Close()
			_ = pub.Close()
		})
		tg, err := apispec.FromURL(srv.URL, demoTTL, demoLease)
		if err != nil {
			t.Fatal(err)
		}
		tg.Events = &eventspec.Config{Kafka: &eventspec.Kafka{Brokers: brokers, Topic: topic}, Key: eventspec.Key{Header: outbox.HeaderKey}, EventID: "/id", Settle: outboxSettle}
		rep := runOutbox(t, tg, "outbox/none-for-failed", "outbox/one-per-execution")
		if got := failing(t, rep); !slices.Equal(got, []string{"outbox/none-for-failed"}) {
			t.Errorf("failed: %v, want [outbox/none-for-failed]", got)
		}
		for _, r := range rep.Results {
			want := scenarios.Pass
			if r.ID == "outbox/none-for-failed" {
				want = scenarios.Fail
			}
			if r.Status != want {
				t.Errorf("%s: %s, want %s", r.Name(), r.Status, want)
			}
		}
	})
}

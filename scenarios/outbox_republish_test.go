package scenarios_test

import (
	"context"
	"encoding/json"
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
)

// republisher is a relay that publishes every event twice, the second
// time at once under a new id: two events no consumer can tell from two
// executions.
type republisher struct {
	reference.Publisher
	n atomic.Int64
}

func (p *republisher) Publish(ctx context.Context, e reference.Event) error {
	if err := p.Publisher.Publish(ctx, e); err != nil {
		return err
	}
	var body map[string]any
	if err := json.Unmarshal(e.Payload, &body); err != nil {
		return err
	}
	e.ID = e.ID + "_again"
	body["id"] = e.ID
	e.Payload, _ = json.Marshal(body)
	return p.Publisher.Publish(ctx, e)
}

// TestOutboxRepublishNewIDEveryRun: a relay that republishes under a new
// id as soon as it publishes makes the run's events check see two events
// for its one request. That once made the outbox cases inconclusive (exit
// 5) whenever the second event came within the check's settle, and a fail
// otherwise; now the check notes it and the outbox cases judge it: failed
// in each of five runs, beside the oracle and as the only oracle.
func TestOutboxRepublishNewIDEveryRun(t *testing.T) {
	t.Parallel() // waits on slow variants, TTLs or a broker: overlaps the rest
	base, cfg := kafkaDemo(t, func(p reference.Publisher) reference.Publisher { return &republisher{Publisher: p} }, nil)
	for _, asOracle := range []bool{false, true} {
		for run := 1; run <= 5; run++ {
			tg, err := apispec.FromURL(base, demoTTL, demoLease)
			if err != nil {
				t.Fatal(err)
			}
			c := *cfg
			tg.Events = &c
			if asOracle {
				tg.Oracle = nil
			}
			rep := runOutbox(t, tg, "outbox/one-per-execution@charges", "outbox/none-for-replay@charges")
			if got := failing(t, rep); !slices.Equal(got, []string{"outbox/none-for-replay", "outbox/one-per-execution"}) {
				t.Errorf("as oracle %v, run %d: failed %v, want both outbox cases (notes %q)", asOracle, run, got, rep.Notes)
			}
		}
	}
}

// TestExtraEventAfter422Blamed: an API that publishes an event after each
// 422 (the refused mismatch executed nothing), with the events as the only
// oracle: outbox/none-for-mismatch fails it (IK-OUTBOX-1), and the
// mismatch cases, whose answers show one execution, do not blame the
// extra event on the mismatch rules (IK-MISMATCH-1, IK-MISMATCH-3).
func TestExtraEventAfter422Blamed(t *testing.T) {
	var n atomic.Int64
	var pub reference.Publisher
	base, cfg := kafkaDemo(t, func(p reference.Publisher) reference.Publisher { pub = p; return p }, func(app http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sw := &statusRecorder{ResponseWriter: w}
			app.ServeHTTP(sw, r)
			if k := strings.Trim(r.Header.Get("Idempotency-Key"), `"`); sw.status == http.StatusUnprocessableEntity && k != "" {
				id := fmt.Sprintf("evt_refused_%d", n.Add(1))
				if err := pub.Publish(r.Context(), reference.Event{ID: id, Key: k, Type: "charge.refused", Payload: []byte(`{"id":"` + id + `"}`)}); err != nil {
					t.Errorf("publish: %v", err)
				}
			}
		})
	})
	tg, err := apispec.FromURL(base, demoTTL, demoLease)
	if err != nil {
		t.Fatal(err)
	}
	tg.Oracle = nil
	tg.Events = cfg
	rep := runOutbox(t, tg, "outbox/none-for-mismatch@charges", "mismatch/original-survives@charges", "mismatch/changed-body@charges")
	if got := failing(t, rep); !slices.Equal(got, []string{"outbox/none-for-mismatch"}) {
		t.Errorf("failed %v, want [outbox/none-for-mismatch] alone", got)
	}
}

// statusRecorder remembers the status written through it.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// kafkaDemo serves the reference publishing through pubOf(the topic's
// publisher), behind wrap (nil: none), on a Kafka topic of its own; it
// returns the base URL and the events: section that reads the topic.
func kafkaDemo(t *testing.T, pubOf func(reference.Publisher) reference.Publisher, wrap func(http.Handler) http.Handler) (string, *eventspec.Config) {
	t.Helper()
	brokers, _ := testenv.RequireKafka(t)
	topic := testenv.KafkaTopic(t, brokers, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pub, err := outbox.Open(ctx, "kafka://"+strings.Join(brokers, ",")+"/"+topic)
	if err != nil {
		t.Fatal(err)
	}
	app, err := demo.New(demo.Options{TTL: demoTTL, Lease: demoLease, Events: pubOf(pub)})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = app
	if wrap != nil {
		h = wrap(app)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		_ = app.Close()
		_ = pub.Close()
	})
	return srv.URL, &eventspec.Config{Kafka: &eventspec.Kafka{Brokers: brokers, Topic: topic}, Key: eventspec.Key{Header: outbox.HeaderKey}, EventID: "/id", Settle: outboxSettle}
}

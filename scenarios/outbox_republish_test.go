package scenarios_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence/events"
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
	brokers, _ := testenv.RequireKafka(t)
	topic := testenv.KafkaTopic(t, brokers, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pub, err := outbox.Open(ctx, "kafka://"+strings.Join(brokers, ",")+"/"+topic)
	if err != nil {
		t.Fatal(err)
	}
	app, err := demo.New(demo.Options{TTL: demoTTL, Lease: demoLease, Events: &republisher{Publisher: pub}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(func() {
		srv.Close()
		_ = app.Close()
		_ = pub.Close()
	})
	for _, asOracle := range []bool{false, true} {
		for run := 1; run <= 5; run++ {
			tg, err := apispec.FromURL(srv.URL, demoTTL, demoLease)
			if err != nil {
				t.Fatal(err)
			}
			tg.Events = &events.Config{Kafka: &events.Kafka{Brokers: brokers, Topic: topic}, Key: events.Key{Header: outbox.HeaderKey}, EventID: "/id", Settle: outboxSettle}
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

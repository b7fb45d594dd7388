package drive

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/idemcheck/idemcheck/internal/testenv"
)

// Each key of the history is held to its events: a committed key with
// none lost its event, a key with more events than executions duplicated
// them (a redelivery of one id is not a second one), a key that did not
// commit may have published one.
func TestCheckEvents(t *testing.T) {
	brokers, _ := testenv.RequireKafka(t)
	topic := testenv.KafkaTopic(t, brokers, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg := &apispec.Target{Events: &eventspec.Config{Kafka: &eventspec.Kafka{Brokers: brokers, Topic: topic},
		Key: eventspec.Key{Header: "idempotency-key"}, EventID: "/id", Settle: 100 * time.Millisecond}}
	es, err := evidence.OpenEvents(ctx, tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	for _, e := range [][2]string{{"once", "e1"}, {"twice", "e2"}, {"twice", "e3"}, {"redelivered", "e4"}, {"redelivered", "e4"}, {"failed", "e5"}} {
		rec := &kgo.Record{Value: []byte(`{"id":"` + e[1] + `"}`), Headers: []kgo.RecordHeader{{Key: "idempotency-key", Value: []byte(e[0])}}}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ok := &chaos.Op{Key: "x", Kind: chaos.KindNormal, Outcome: chaos.ClientOK, Status: 201}
	outs := []chaos.KeyOutcome{
		{Key: "once", IDs: []string{"ch_1"}},
		{Key: "twice", IDs: []string{"ch_2"}},
		{Key: "redelivered", IDs: []string{"ch_3"}},
		{Key: "lost", Op: ok},
		{Key: "failed", Op: &chaos.Op{Kind: chaos.KindTransient, Outcome: chaos.ClientFail, Status: 503}},
	}
	rep, vs := checkEvents(ctx, es, outs, time.Now())
	if rep.Keys != 5 || rep.Events != 5 || rep.Lost != 1 || rep.Duplicated != 1 || rep.Redeliveries != 1 || rep.RedeliveredKeys != 1 || rep.Error != "" {
		t.Fatalf("report %+v: want 5 keys, 5 events (each id once), 1 lost, 1 duplicated, 1 redelivery on 1 key apart from them", rep)
	}
	if len(vs) != 2 || vs[0].Key != "twice" || vs[0].Rule != chaos.RuleEventDuplicated || !strings.Contains(vs[0].Detail, "2 events for 1 execution: partition 0 offset ") ||
		vs[1].Key != "lost" || vs[1].Rule != chaos.RuleEventLost || !strings.Contains(vs[1].Detail, "published 0 events: no event") {
		t.Fatalf("violations %+v: want twice duplicated and lost lost, with their events", vs)
	}
}

// A stream on which no key of the history has an event is a wrong topic or
// key, not every event lost: nothing is judged, and the report says why.
func TestCheckEventsWrongStream(t *testing.T) {
	brokers, _ := testenv.RequireKafka(t)
	topic := testenv.KafkaTopic(t, brokers, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg := &apispec.Target{Events: &eventspec.Config{Kafka: &eventspec.Kafka{Brokers: brokers, Topic: topic},
		Key: eventspec.Key{Header: "idempotency-key"}, Settle: 20 * time.Millisecond}}
	es, err := evidence.OpenEvents(ctx, tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	rep, vs := checkEvents(ctx, es, []chaos.KeyOutcome{{Key: "a", IDs: []string{"ch_1"}}, {Key: "b", IDs: []string{"ch_2"}}}, time.Now())
	if len(vs) != 0 || rep.Lost != 0 || !strings.Contains(rep.Error, "none of the 2 keys that executed has an event") || !strings.Contains(rep.Error, "no event at all") {
		t.Fatalf("report %+v, violations %d: want nothing judged and why", rep, len(vs))
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The shop announces each paid order as an order.paid event on a Kafka
// topic. The event is a row of the outbox table, written in the
// transaction that records the order and settles its key, so an order is
// announced exactly when it is recorded; a relay goroutine publishes
// pending rows and marks them sent. A relay that dies between the two
// publishes the row again after a restart under the same event_id
// (at-least-once): consumers drop an id they have seen.

// paidEvent is the payload of an order.paid event.
type paidEvent struct {
	EventID    string    `json:"event_id"`
	Type       string    `json:"type"`
	OccurredAt time.Time `json:"occurred_at"`
	Order      order     `json:"order"`
}

// newPaidEvent is o's announcement under a fresh event id.
func newPaidEvent(o order) paidEvent {
	return paidEvent{EventID: newID("evt_"), Type: "order.paid", OccurredAt: time.Now().UTC().Truncate(time.Microsecond), Order: o}
}

// relayPoll is how often the relay looks for pending rows; relayBatch
// bounds the rows one pass publishes.
const (
	relayPoll  = 100 * time.Millisecond
	relayBatch = 100
)

// relayLinger is how long the producer holds a record to batch it with
// the next ones; the correct relay flushes each batch at once.
const relayLinger = 500 * time.Millisecond

// publisher is the shop's Kafka producer, bound to its topic.
type publisher struct{ client *kgo.Client }

// checkKafka says what is wrong with the -kafka-brokers and -kafka-topic
// pair: both or neither.
func checkKafka(brokers, topic string) error {
	switch {
	case brokers == "" && topic == "":
		return nil
	case brokers == "":
		return fmt.Errorf("-kafka-topic %q: needs -kafka-brokers", topic)
	case topic == "":
		return errors.New("-kafka-brokers: needs -kafka-topic")
	}
	for _, b := range strings.Split(brokers, ",") {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return fmt.Errorf("-kafka-brokers %q: want host:port[,host:port...]", brokers)
		}
	}
	return nil
}

func newPublisher(brokers, topic string) (*publisher, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(brokers, ",")...),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(relayLinger),
		kgo.RecordDeliveryTimeout(10*time.Second),
	)
	if err != nil {
		return nil, fmt.Errorf("-kafka-brokers: %w", err)
	}
	return &publisher{client: cl}, nil
}

func (p *publisher) close() { p.client.Close() }

// record is ev as a Kafka record: keyed by the order (one partition per
// order), the type and the order's idempotency key in headers.
func (p *publisher) record(ev paidEvent, key string, payload []byte) *kgo.Record {
	return &kgo.Record{Key: []byte(ev.Order.OrderID), Value: payload, Headers: []kgo.RecordHeader{
		{Key: "event-type", Value: []byte(ev.Type)},
		{Key: "event-id", Value: []byte(ev.EventID)},
		{Key: "idempotency-key", Value: []byte(key)},
	}}
}

// publishNow sends ev straight to the broker and waits for its ack: the
// publish-before-commit build's handler does this.
func (p *publisher) publishNow(ctx context.Context, ev paidEvent, key string) error {
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return p.send(ctx, p.record(ev, key, payload))
}

// send publishes recs and waits for the broker's acks, without waiting
// out the linger.
func (p *publisher) send(ctx context.Context, recs ...*kgo.Record) error {
	errs := make(chan error, len(recs))
	for _, r := range recs {
		p.client.Produce(ctx, r, func(_ *kgo.Record, err error) { errs <- err })
	}
	if err := p.client.Flush(ctx); err != nil {
		return err
	}
	for range recs {
		if err := <-errs; err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	return nil
}

// outboxRow is a pending row as the relay reads it.
type outboxRow struct {
	eventID, key string
	payload      []byte
}

// relay publishes pending outbox rows every relayPoll until ctx ends.
func (s *shop) relay(ctx context.Context) {
	batches(ctx, relayPoll, 15*time.Second, relayBatch, "relay", s.relayOnce)
}

// relayOnce publishes one batch of pending rows. The rows stay locked
// (FOR UPDATE SKIP LOCKED: another replica's relay passes them by) until
// the broker has acknowledged every one and they are marked sent in the
// same transaction; if the process dies first, the transaction rolls back
// and the rows are published again.
func (s *shop) relayOnce(ctx context.Context) (int, error) {
	if s.defect == relayLosesOnKill {
		return s.relayMarkFirst(ctx)
	}
	tx, err := s.store.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := pendingRows(ctx, tx, `
SELECT event_id, idempotency_key, payload FROM outbox WHERE sent_at IS NULL
ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED`)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	ids := make([]string, len(rows))
	recs := make([]*kgo.Record, len(rows))
	for i, r := range rows {
		ids[i], recs[i] = r.eventID, s.recordOf(r)
	}
	if err := s.events.send(ctx, recs...); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `UPDATE outbox SET sent_at = now() WHERE event_id = ANY($1)`, ids); err != nil {
		return 0, fmt.Errorf("mark sent: %w", err)
	}
	return len(rows), tx.Commit(ctx)
}

// relayMarkFirst is the relay-loses-on-kill build's pass: it claims the
// batch by marking it sent (no row is published twice, it reasons) and
// hands the rows to the producer without waiting for the broker. A
// process that dies before the producer's linger ends has marked rows
// sent that never reached the broker.
func (s *shop) relayMarkFirst(ctx context.Context) (int, error) {
	rows, err := pendingRows(ctx, s.store.pool, `
UPDATE outbox SET sent_at = now() WHERE event_id IN (
	SELECT event_id FROM outbox WHERE sent_at IS NULL ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED)
RETURNING event_id, idempotency_key, payload`)
	if err != nil {
		return 0, err
	}
	for _, r := range rows {
		s.events.client.Produce(context.WithoutCancel(ctx), s.recordOf(r), func(rec *kgo.Record, err error) {
			if err != nil {
				slog.Error("shop: event not published", "event", string(rec.Key), "err", err)
			}
		})
	}
	return len(rows), nil
}

// recordOf is an outbox row as a Kafka record.
func (s *shop) recordOf(r outboxRow) *kgo.Record {
	var ev paidEvent
	_ = json.Unmarshal(r.payload, &ev) // the shop wrote it: the headers need its type and order
	return s.events.record(ev, r.key, r.payload)
}

// querier runs a query: the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// pendingRows runs query (relayBatch as $1) and reads its outbox rows.
func pendingRows(ctx context.Context, db querier, query string) ([]outboxRow, error) {
	rows, err := db.Query(ctx, query, relayBatch)
	if err != nil {
		return nil, fmt.Errorf("pending events: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (outboxRow, error) {
		var r outboxRow
		return r, row.Scan(&r.eventID, &r.key, &r.payload)
	})
}

// insertEvent writes ev to the outbox.
func insertEvent(ctx context.Context, db executor, ev paidEvent, key string) error {
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if _, err := db.Exec(ctx, `INSERT INTO outbox (event_id, order_id, idempotency_key, payload) VALUES ($1, $2, $3, $4)`,
		ev.EventID, ev.Order.OrderID, key, payload); err != nil {
		return fmt.Errorf("insert event: %w", err)
	}
	return nil
}

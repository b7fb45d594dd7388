package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/outbox"
	"github.com/idemcheck/idemcheck/reference/pgstore"
)

// TestOutboxEvents runs the demo on PostgreSQL with its events going to a
// real Kafka topic, correct and with each event defect, through three
// histories: a key executed once and replayed twice; a key whose first
// execution outlives its lease, so a retry takes the key over and the
// first one's commit fails (its charge rolls back: one charge in all);
// and a restart of the relay. The correct build publishes one event per
// key; each defect publishes a wrong number for one of them.
func TestOutboxEvents(t *testing.T) {
	for _, tc := range []struct {
		defect               reference.Defect
		replayed, tookOver   int // events per key before the restart
		afterRestartReplayed int
	}{
		{"", 1, 1, 1},
		{reference.EventOnReplay, 3, 1, 3},
		{reference.EventOutsideTx, 1, 2, 1},
		{reference.RelayRepublish, 1, 1, 2},
	} {
		name := string(tc.defect)
		if name == "" {
			name = "correct"
		}
		t.Run(name, func(t *testing.T) {
			brokers, _ := testenv.RequireKafka(t)
			topic := testenv.KafkaTopic(t, brokers, 2)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			pub, err := outbox.Open(ctx, "kafka://"+strings.Join(brokers, ",")+"/"+topic)
			if err != nil {
				t.Fatal(err)
			}
			defer pub.Close()
			s := open(t)
			ledger := pgstore.NewLedger(s)
			var defects []string
			if tc.defect != "" {
				defects = []string{string(tc.defect)}
			}
			opts := demo.Options{Store: s, Ledger: ledger, Lease: 300 * time.Millisecond, Events: pub, Defects: defects}
			app, err := demo.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(app)
			defer func() { srv.Close(); _ = app.Close() }()

			replayed := uuid.NewString()
			for i := range 3 {
				if r, err := post(srv.URL, replayed, `{"amount":100,"currency":"usd"}`); err != nil || r.Status != http.StatusCreated {
					t.Fatalf("request %d: %+v %v", i, r, err)
				}
			}

			tookOver := uuid.NewString()
			const slow = `{"amount":200,"currency":"usd","delay_ms":600}`
			var wg sync.WaitGroup
			var first testenv.Reply
			wg.Add(1)
			go func() { defer wg.Done(); first, _ = post(srv.URL, tookOver, slow) }()
			time.Sleep(450 * time.Millisecond) // past the 300 ms lease, before the first ends at 600 ms
			second, err := post(srv.URL, tookOver, slow)
			wg.Wait()
			if err != nil || second.Status != http.StatusCreated || first.Status != http.StatusServiceUnavailable {
				t.Fatalf("take-over: first %d, second %d %v; want 503 (its commit lost the key) and 201", first.Status, second.Status, err)
			}
			if n, err := ledger.Count(ctx, "alice", tookOver); err != nil || n != 1 {
				t.Fatalf("take-over: %d charges (%v), want 1: the first one rolled back", n, err)
			}

			counts := eventCounts(t, brokers, topic, 2)
			if counts[replayed] != tc.replayed || counts[tookOver] != tc.tookOver {
				t.Fatalf("events: executed and replayed %d (want %d), taken over %d (want %d)",
					counts[replayed], tc.replayed, counts[tookOver], tc.tookOver)
			}

			// A restart: another app, and so another relay, on the same store.
			again, err := demo.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			counts = eventCounts(t, brokers, topic, tc.afterRestartReplayed+tc.tookOver)
			_ = again.Close()
			if counts[replayed] != tc.afterRestartReplayed {
				t.Fatalf("after a relay restart: %d events for the replayed key, want %d", counts[replayed], tc.afterRestartReplayed)
			}
		})
	}
}

// eventCounts counts the topic's events per idempotency-key header.
func eventCounts(t *testing.T, brokers []string, topic string, atLeast int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, r := range testenv.KafkaSettled(t, brokers, topic, atLeast) {
		out[testenv.KafkaHeader(r, outbox.HeaderKey)]++
	}
	return out
}

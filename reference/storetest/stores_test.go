package storetest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/memstore"
	"github.com/idemcheck/idemcheck/reference/outbox"
	"github.com/idemcheck/idemcheck/reference/pgstore"
	"github.com/idemcheck/idemcheck/reference/redisstore"
	"github.com/idemcheck/idemcheck/reference/storetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// backend opens one store kind with the ledger serve would pair it with.
type backend struct {
	name string
	open func(t testing.TB) (reference.Store, demo.Ledger)
}

var backends = []backend{
	{"memory", func(t testing.TB) (reference.Store, demo.Ledger) {
		s := memstore.New()
		t.Cleanup(func() { _ = s.Close() })
		return s, demo.NewMemoryLedger()
	}},
	{"postgres", func(t testing.TB) (reference.Store, demo.Ledger) {
		dsn := testenv.RequirePostgres(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		s, err := pgstore.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s, pgstore.NewLedger(s)
	}},
	{"redis", func(t testing.TB) (reference.Store, demo.Ledger) {
		url := testenv.RequireRedis(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := redisstore.Open(ctx, url, redisstore.WithPrefix(testenv.KeyPrefix(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s, demo.NewMemoryLedger()
	}},
}

// The memory store meets the contract (PostgreSQL and Redis run it in
// their own packages).
func TestMemstore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) reference.Store {
		s, _ := backends[0].open(t)
		return s
	})
}

// Every store keeps its outbox to the contract.
func TestOutboxContract(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			storetest.RunOutbox(t, func(t *testing.T) reference.EventStore {
				s, _ := b.open(t)
				return s.(reference.EventStore)
			})
		})
	}
}

// On every store, the demo publishes one event per execution through its
// outbox to a real Redis stream: the key and the id both as fields and in
// the JSON payload, and nothing for the replay.
func TestDemoEventsOnEachStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			url := testenv.RequireRedis(t)
			stream := testenv.KeyPrefix(t) + "events"
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pub, err := outbox.Open(ctx, url+"?stream="+stream)
			if err != nil {
				t.Fatal(err)
			}
			defer pub.Close()
			s, l := b.open(t)
			base := demotest.Serve(t, demo.Options{Store: s, Ledger: l, Events: pub})
			k := uuid.NewString()
			for range 2 {
				if r, err := testenv.Post(base, "/v1/charges", "alice", k, `{"amount":1200,"currency":"eur"}`); err != nil || r.Status != http.StatusCreated {
					t.Fatalf("POST: %+v %v", r, err)
				}
			}
			opts, _ := redis.ParseURL(url)
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			var xs []redis.XMessage
			for deadline := time.Now().Add(10 * time.Second); len(xs) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				xs, _ = rdb.XRange(ctx, stream, "-", "+").Result()
			}
			time.Sleep(300 * time.Millisecond) // six relay polls: a second event would be there
			if xs, err = rdb.XRange(ctx, stream, "-", "+").Result(); err != nil || len(xs) != 1 {
				t.Fatalf("%d events (%v), want 1 for one execution and its replay", len(xs), err)
			}
			v := xs[0].Values
			var p struct {
				ID             string `json:"id"`
				IdempotencyKey string `json:"idempotency_key"`
			}
			payload, _ := v["payload"].(string)
			_ = json.Unmarshal([]byte(payload), &p)
			if v[outbox.HeaderKey] != k || v[outbox.HeaderID] == "" || p.ID != v[outbox.HeaderID] || p.IdempotencyKey != k {
				t.Fatalf("event %v: want key %s and one id in fields and payload", v, k)
			}
		})
	}
}

// serveDemo runs the demo app on a store over loopback HTTP.
func serveDemo(t testing.TB, b backend, ttl, lease time.Duration) string {
	t.Helper()
	s, l := b.open(t)
	return demotest.Serve(t, demo.Options{Store: s, Ledger: l, TTL: ttl, Lease: lease})
}

// The demo app behaves the same on every store: a create, its byte-identical
// replay, a 422 on a changed body, and the created charge readable back.
func TestDemoOnEachStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			base := serveDemo(t, b, time.Hour, 30*time.Second)
			k := uuid.NewString()
			const body = `{"amount":1200,"currency":"eur","description":"smoke"}`
			first, err := testenv.Post(base, "/v1/charges", "alice", k, body)
			if err != nil || first.Status != http.StatusCreated || first.Replayed() {
				t.Fatalf("create: %+v %v", first, err)
			}
			again, err := testenv.Post(base, "/v1/charges", "alice", k, body)
			if err != nil || again.Status != http.StatusCreated || !again.Replayed() || again.Body != first.Body ||
				again.Header.Get("Location") != first.Header.Get("Location") {
				t.Fatalf("replay: %+v %v; want the first response %q replayed", again, err, first.Body)
			}
			mm, err := testenv.Post(base, "/v1/charges", "alice", k, strings.Replace(body, "1200", "1201", 1))
			if err != nil || mm.Status != http.StatusUnprocessableEntity || mm.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("mismatch: %+v %v; want 422 problem", mm, err)
			}
			req, _ := http.NewRequest(http.MethodGet, base+first.Header.Get("Location"), nil)
			req.Header.Set("Authorization", "Bearer alice")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s = %d, want the created charge", first.Header.Get("Location"), resp.StatusCode)
			}
		})
	}
}

package redisstore_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/redisstore"
)

// TestOutageAndRestart: with Redis down the demo app answers 503
// application/problem+json (never 500), and once Redis is back on the same
// port every key works again, including one whose request was in flight
// when Redis died: no key stays wedged.
func TestOutageAndRestart(t *testing.T) {
	rs := testenv.RequireRestartableRedis(t)
	s := open(t, rs.URL())
	base := demotest.Serve(t, demo.Options{Store: s, Lease: 2 * time.Second})
	const body = `{"amount":100,"currency":"usd"}`

	before := uuid.NewString()
	if r, err := testenv.Post(base, "/v1/charges", "alice", before, body); err != nil || r.Status != http.StatusCreated {
		t.Fatalf("before the outage: %+v %v", r, err)
	}
	// A request claims its key, then Redis dies while its handler runs.
	inflight := uuid.NewString()
	slow := make(chan testenv.Reply, 1)
	go func() {
		r, _ := testenv.Post(base, "/v1/charges", "alice", inflight, `{"amount":5,"currency":"usd","delay_ms":500}`)
		slow <- r
	}()
	waitClaimed(t, s, inflight)
	rs.Kill()

	for _, k := range []string{before, uuid.NewString()} {
		r, err := testenv.Post(base, "/v1/charges", "alice", k, body)
		if err != nil {
			t.Fatalf("during the outage: %v", err)
		}
		if r.Status != http.StatusServiceUnavailable || r.Header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("during the outage: %d %s %q, want 503 application/problem+json", r.Status, r.Header.Get("Content-Type"), r.Body)
		}
	}
	<-slow // whatever it answered, its completion could not be stored

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rs.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{before, inflight, uuid.NewString()} {
		var (
			r   testenv.Reply
			err error
		)
		// The client's pool reconnects on the next command; allow a few
		// attempts for connections broken by the restart.
		for attempt := 0; attempt < 20; attempt++ {
			if r, err = testenv.Post(base, "/v1/charges", "alice", k, body); err == nil && r.Status != http.StatusServiceUnavailable {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil || r.Status != http.StatusCreated {
			t.Fatalf("key %s after Redis came back: %+v %v, want 201 (a fresh execution: the restart lost the records)", k, r, err)
		}
		if again, err := testenv.Post(base, "/v1/charges", "alice", k, body); err != nil || !again.Replayed() || again.Body != r.Body {
			t.Fatalf("key %s after Redis came back does not replay: %+v %v", k, again, err)
		}
	}
}

// waitClaimed waits until the record of idempotency key k exists.
func waitClaimed(t *testing.T, s *redisstore.Store, k string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		got, err := s.Client().Keys(context.Background(), "*"+k).Result()
		if err == nil && len(got) == 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("key %s was never claimed", k)
}

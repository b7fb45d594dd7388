package redisstore_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// TestOutcomeStoredAfterOutage: Redis dies while a handler runs, so its
// outcome cannot be recorded; Redis comes back (with its data) only after
// the claim's lease ran out. The retry must replay the outcome the client
// may already have seen, not take the expired lease over and charge again.
func TestOutcomeStoredAfterOutage(t *testing.T) {
	rs := testenv.RequireDurableRedis(t)
	s := open(t, rs.URL())
	const lease = 500 * time.Millisecond
	base := demotest.Serve(t, demo.Options{Store: s, Lease: lease})
	const body = `{"amount":5,"currency":"usd","delay_ms":800}`
	key := uuid.NewString()

	first := make(chan testenv.Reply, 1)
	go func() {
		r, _ := testenv.Post(base, "/v1/charges", "alice", key, body)
		first <- r
	}()
	waitClaimed(t, s, key)
	rs.Kill()
	r := <-first
	if r.Status != http.StatusCreated {
		t.Fatalf("the handler ran to the end: got %d %q, want its 201", r.Status, r.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	time.Sleep(lease) // the claim's lease is over before Redis is back
	if err := rs.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	var again testenv.Reply
	for attempt := 0; attempt < 40; attempt++ { // the pool reconnects on use
		var err error
		if again, err = testenv.Post(base, "/v1/charges", "alice", key, body); err == nil && again.Status != http.StatusServiceUnavailable {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if again.Status != http.StatusCreated || !again.Replayed() || again.Body != r.Body {
		t.Fatalf("retry after the outage: %d replayed=%v %q; want a replay of the first answer %q (no second charge)",
			again.Status, again.Replayed(), again.Body, strings.TrimSpace(r.Body))
	}
}

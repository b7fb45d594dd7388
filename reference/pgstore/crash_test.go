package pgstore_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

func post(base, key, body string) (testenv.Reply, error) {
	return testenv.Post(base, "/v1/charges", "alice", key, body)
}

// TestCrashExactlyOnce kills `idemcheck serve --store postgres` with SIGKILL
// while requests are in flight (their charges queued in units of work),
// restarts it and retries every key: each operation must end with exactly
// one charge in the database and a stored response that replays, and
// operations completed before the crash must replay unchanged.
func TestCrashExactlyOnce(t *testing.T) {
	dsn := testenv.RequirePostgres(t)
	bin := testenv.BuildIdemcheck(t)
	args := []string{"--store", "postgres", "--dsn", dsn, "--lease", "1s"}
	const slowBody = `{"amount":700,"currency":"usd","description":"crash","delay_ms":1500}`
	const fastBody = `{"amount":300,"currency":"usd","description":"before crash"}`

	srv := testenv.StartServe(t, bin, args...)
	done := map[string]string{} // completed before the crash: key -> body
	for range 3 {
		k := uuid.NewString()
		r, err := post(srv.URL, k, fastBody)
		if err != nil || r.Status != http.StatusCreated {
			t.Fatalf("before crash: %+v %v", r, err)
		}
		done[k] = r.Body
	}
	inflight := make([]string, 8)
	for i := range inflight {
		inflight[i] = uuid.NewString()
		go func(k string) { _, _ = post(srv.URL, k, slowBody) }(inflight[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// Kill only once every slow request holds its claim: the overlap is
	// engineered, not hoped for.
	waitFor(t, "all slow requests in flight", func() bool {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM idempotency_records WHERE state = 1 AND key = ANY($1)`, inflight).Scan(&n)
		return err == nil && n == len(inflight)
	})
	srv.Kill()
	t.Logf("killed with %d requests in flight, %d completed", len(inflight), len(done))
	var leftover int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM charges WHERE idempotency_key = ANY($1)`, inflight).Scan(&leftover); err != nil {
		t.Fatal(err)
	}
	if leftover != 0 {
		t.Fatalf("%d charges of in-flight requests survived the crash without their record", leftover)
	}

	srv = testenv.StartServe(t, bin, args...)
	final := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, k := range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Bounded: the dead owner's lease (1s) ends, then one retry runs.
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				r, err := post(srv.URL, k, slowBody)
				if err == nil && r.Status == http.StatusCreated {
					mu.Lock()
					final[k] = r.Body
					mu.Unlock()
					return
				}
				if err == nil && r.Status != http.StatusConflict {
					t.Errorf("retry of %s: unexpected %d %s", k, r.Status, r.Body)
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
			t.Errorf("key %s never completed after restart", k)
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for k, body := range done {
		final[k] = body
	}
	var retried int
	for k, body := range final {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM charges WHERE principal = 'alice' AND idempotency_key = $1`, k).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("key %s: %d charges in the database, want exactly 1", k, n)
		}
		sent := slowBody
		if done[k] != "" {
			sent = fastBody
		}
		r, err := post(srv.URL, k, sent)
		if err != nil || r.Status != http.StatusCreated || !r.Replayed() || r.Body != body {
			t.Errorf("key %s: replay after restart = %+v, %v; want 201 replayed %s", k, r, err, body)
		}
		var c struct{ ID string }
		if json.Unmarshal([]byte(body), &c) != nil || c.ID == "" {
			t.Errorf("key %s: response has no charge id: %s", k, body)
		}
		if done[k] == "" {
			retried++
		}
	}
	t.Logf("after restart: %d retried and %d earlier operations each have exactly one charge and replay", retried, len(done))
}

// TestMemoryStoreForgetsOnRestart documents the memory store's guarantee:
// records live in the process, so after a restart a retry executes again
// and creates a second charge.
func TestMemoryStoreForgetsOnRestart(t *testing.T) {
	bin := testenv.BuildIdemcheck(t)
	const body = `{"amount":100,"currency":"usd"}`
	k := uuid.NewString()
	srv := testenv.StartServe(t, bin, "--store", "memory")
	first, err := post(srv.URL, k, body)
	if err != nil || first.Status != http.StatusCreated {
		t.Fatalf("first: %+v %v", first, err)
	}
	if again, err := post(srv.URL, k, body); err != nil || !again.Replayed() || again.Body != first.Body {
		t.Fatalf("replay before restart: %+v %v", again, err)
	}
	srv.Kill()
	srv = testenv.StartServe(t, bin, "--store", "memory")
	after, err := post(srv.URL, k, body)
	if err != nil || after.Status != http.StatusCreated {
		t.Fatalf("after restart: %+v %v", after, err)
	}
	if after.Replayed() || after.Body == first.Body {
		t.Fatalf("the memory store replayed across a restart (%+v): its documented loss did not happen", after)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

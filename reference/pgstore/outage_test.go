package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/pgstore"
)

// TestServerLost: when PostgreSQL goes away mid-run, the demo app answers
// 503 application/problem+json (never a 500 or a stack trace), for new
// keys and for keys that were completed before.
func TestServerLost(t *testing.T) {
	testenv.RequirePostgres(t) // skips or fails like every store test when none is available
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, stop, how, err := testenv.Postgres(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if how == testenv.HowEnv {
		t.Skip("IDEMCHECK_PG_DSN names a server this test must not stop")
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	s, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	app, err := demo.New(demo.Options{Store: s, Ledger: pgstore.NewLedger(s)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	defer func() { srv.Close(); _ = app.Close() }()
	const body = `{"amount":100,"currency":"usd"}`
	done := uuid.NewString()
	if r, err := testenv.Post(srv.URL, "/v1/charges", "alice", done, body); err != nil || r.Status != http.StatusCreated {
		t.Fatalf("before the outage: %+v %v", r, err)
	}
	stop()
	stopped = true
	for _, k := range []string{done, uuid.NewString()} {
		r, err := testenv.Post(srv.URL, "/v1/charges", "alice", k, body)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusServiceUnavailable || r.Header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("with the server gone: %d %s %q, want 503 application/problem+json", r.Status, r.Header.Get("Content-Type"), r.Body)
		}
	}
}

package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/pgstore"
	"github.com/idemcheck/idemcheck/reference/storetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// open opens a store on a fresh schema, closed when the test ends.
func open(t testing.TB, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	dsn := testenv.RequirePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) reference.Store { return open(t) })
}

// Cleanup deletes expired records in bounded batches and keeps live ones;
// Close stops the background cleanup and the pool without leaking goroutines.
func TestCleanupAndClose(t *testing.T) {
	dsn := testenv.RequirePostgres(t)
	ignore := goleak.IgnoreCurrent()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, dsn, pgstore.WithCleanup(time.Hour, 3))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		ttl := 10 * time.Millisecond
		if i == 0 {
			ttl = time.Hour
		}
		_, err := s.Claim(ctx, reference.ClaimRequest{Scope: reference.Scope{Principal: "p", Method: "POST", Path: "/x", Key: fmt.Sprint(i)},
			Fingerprint: "fp", Lease: time.Second, TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	n, err := s.Cleanup(ctx)
	if err != nil || n != 7 {
		t.Fatalf("Cleanup deleted %d (%v), want the 7 expired records (in batches of 3)", n, err)
	}
	var left int
	if err := s.Pool().QueryRow(ctx, "SELECT count(*) FROM idempotency_records").Scan(&left); err != nil || left != 1 {
		t.Fatalf("%d records left (%v), want the live one", left, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, ignore)
}

// TestOpenBesideTraffic: a store opening on a current schema runs no DDL,
// so it does not wait for (or deadlock with) a transaction writing both
// tables, as a serving replica's completion does while another restarts.
// Before, Open's ALTER TABLE waited behind the open transaction until its
// context ran out.
func TestOpenBesideTraffic(t *testing.T) {
	dsn := testenv.RequirePostgres(t) // one schema for both stores
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, dsn) // the schema is current from here on
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `INSERT INTO charges (id, object, principal, amount, currency, created) VALUES ('ch_open_beside', 'charge', 'p', 1, 'usd', now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM idempotency_records WHERE key = 'none'`); err != nil {
		t.Fatal(err)
	}
	octx, ocancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer ocancel()
	second, err := pgstore.Open(octx, dsn)
	if err != nil {
		t.Fatalf("open beside a transaction on both tables: %v", err)
	}
	_ = second.Close()
}

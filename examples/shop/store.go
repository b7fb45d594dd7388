package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schema is the shop's PostgreSQL schema. orders keeps every attempt at
// an order (paid, declined, failed) with the idempotency key it came
// under, as sent by the client (the sf-string's content, unquoted);
// idempotency_records holds one record per (account, method, path, key);
// outbox holds the events of paid orders until the relay has published
// them (events.go).
const schema = `
CREATE TABLE IF NOT EXISTS products (
	sku   text PRIMARY KEY,
	name  text NOT NULL,
	price bigint NOT NULL
);
INSERT INTO products (sku, name, price) VALUES
	('abc', 'Espresso beans, 1 kg', 2450),
	('def', 'Milk jug', 1290),
	('ghi', 'Grinder', 18900)
ON CONFLICT (sku) DO NOTHING;
CREATE TABLE IF NOT EXISTS orders (
	order_id        text PRIMARY KEY,
	account         text NOT NULL,
	sku             text NOT NULL,
	quantity        integer NOT NULL,
	amount          bigint NOT NULL,
	currency        text NOT NULL,
	reference       text NOT NULL,
	status          text NOT NULL,
	payment_id      text,
	idempotency_key text,
	created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS orders_idempotency_key ON orders (idempotency_key);
CREATE INDEX IF NOT EXISTS orders_account_created ON orders (account, created_at DESC);
CREATE TABLE IF NOT EXISTS idempotency_records (
	account      text NOT NULL,
	method       text NOT NULL,
	path         text NOT NULL,
	key          text NOT NULL,
	fingerprint  bytea NOT NULL,
	state        text NOT NULL,
	owner        text,
	locked_until timestamptz NOT NULL,
	expires_at   timestamptz NOT NULL,
	status       integer,
	headers      jsonb,
	body         bytea,
	PRIMARY KEY (account, method, path, key)
);
CREATE INDEX IF NOT EXISTS idempotency_records_expires ON idempotency_records (expires_at);
CREATE TABLE IF NOT EXISTS outbox (
	event_id        text PRIMARY KEY,
	order_id        text NOT NULL,
	idempotency_key text NOT NULL,
	payload         jsonb NOT NULL,
	created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
	sent_at         timestamptz
);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (created_at) WHERE sent_at IS NULL;
`

// Record states. A record is in progress while its owner holds the lease,
// completed once it holds a response; only the 5xx-wedges-key build ever
// writes a third, "failed" (finish).
const (
	inProgress = "in_progress"
	completed  = "completed"
)

// scope is what a key is unique within.
type scope struct{ account, method, path, key string }

// record is a key's record as the lookup reads it.
type record struct {
	fingerprint []byte
	state       string
	live        bool // in progress and its lease not run out
	expired     bool // completed (or failed) and past its TTL
	resp        *stored
}

// free reports whether the record no longer holds its key: past its TTL,
// or in progress with its lease run out (its owner died).
func (r *record) free() bool { return r.expired || (r.state == inProgress && !r.live) }

// stored is a response kept for replay.
type stored struct {
	Status int
	Header http.Header
	Body   []byte
}

// order is one row of orders.
type order struct {
	OrderID   string    `json:"order_id"`
	Status    string    `json:"status"`
	SKU       string    `json:"sku"`
	Quantity  int       `json:"quantity"`
	Amount    int64     `json:"amount"`
	Currency  string    `json:"currency"`
	Reference string    `json:"reference"`
	PaymentID string    `json:"payment_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	account   string
	key       string
}

// store is the shop's PostgreSQL access. Every time it compares is the
// database's now(), so replicas of the shop agree on leases and TTLs.
type store struct{ pool *pgxpool.Pool }

func openStore(ctx context.Context, dsn string) (*store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err // config.check parsed it already
	}
	cfg.MaxConns = 32
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &store{pool: pool}, nil
}

// schemaLock serialises replicas preparing the schema: concurrent CREATE
// ... IF NOT EXISTS of one table can fail on PostgreSQL's catalog.
// Replicas that find the schema current run no DDL.
const schemaLock = 0x5709

func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, schemaLock); err != nil {
		return err
	}
	// On a current schema no DDL runs: CREATE INDEX IF NOT EXISTS still
	// locks its table, and a replica restarting beside serving ones would
	// stall their orders behind it. The schema's last object says current.
	var current bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('outbox_pending') IS NOT NULL`).Scan(&current); err != nil || current {
		return err
	}
	if _, err := tx.Exec(ctx, schema); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (s *store) close() { s.pool.Close() }

func ms(d time.Duration) int64 { return d.Milliseconds() }

// claim takes the key for owner atomically: it inserts the record, or
// takes over one whose lease ran out (its owner died) or whose TTL is
// over. It reports whether owner now holds the key.
func (s *store) claim(ctx context.Context, sc scope, fp []byte, owner string, lease, ttl time.Duration) (bool, error) {
	var got string
	err := s.pool.QueryRow(ctx, `
INSERT INTO idempotency_records AS r (account, method, path, key, fingerprint, state, owner, locked_until, expires_at)
VALUES ($1, $2, $3, $4, $5, 'in_progress', $6, now() + $7 * interval '1 millisecond', now() + $8 * interval '1 millisecond')
ON CONFLICT (account, method, path, key) DO UPDATE
	SET fingerprint = excluded.fingerprint, state = 'in_progress', owner = excluded.owner,
	    locked_until = excluded.locked_until, expires_at = excluded.expires_at,
	    status = NULL, headers = NULL, body = NULL
	WHERE (r.state = 'in_progress' AND r.locked_until <= now())
	   OR (r.state <> 'in_progress' AND r.expires_at <= now())
RETURNING owner`, sc.account, sc.method, sc.path, sc.key, fp, owner, ms(lease), ms(ttl)).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil && got == owner, err
}

// insertUnchecked is the check-then-insert build's claim: it inserts the
// record if none exists and does not look at whether it did.
func (s *store) insertUnchecked(ctx context.Context, sc scope, fp []byte, owner string, lease, ttl time.Duration) error {
	_, err := s.pool.Exec(ctx, `
INSERT INTO idempotency_records (account, method, path, key, fingerprint, state, owner, locked_until, expires_at)
VALUES ($1, $2, $3, $4, $5, 'in_progress', $6, now() + $7 * interval '1 millisecond', now() + $8 * interval '1 millisecond')
ON CONFLICT (account, method, path, key) DO NOTHING`, sc.account, sc.method, sc.path, sc.key, fp, owner, ms(lease), ms(ttl))
	return err
}

// lookup reads a key's record; nil when there is none.
func (s *store) lookup(ctx context.Context, sc scope) (*record, error) {
	var (
		rec    record
		status *int
		header []byte
		body   []byte
	)
	err := s.pool.QueryRow(ctx, `
SELECT fingerprint, state, state = 'in_progress' AND locked_until > now(), state <> 'in_progress' AND expires_at <= now(),
       status, headers, body
FROM idempotency_records WHERE account = $1 AND method = $2 AND path = $3 AND key = $4`,
		sc.account, sc.method, sc.path, sc.key).Scan(&rec.fingerprint, &rec.state, &rec.live, &rec.expired, &status, &header, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if status != nil {
		rec.resp = &stored{Status: *status, Body: body}
		if err := json.Unmarshal(header, &rec.resp.Header); err != nil {
			return nil, fmt.Errorf("record headers: %w", err)
		}
	}
	return &rec, nil
}

// price reads a product's unit price; ok is false for an unknown SKU.
func (s *store) price(ctx context.Context, sku string) (price int64, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `SELECT price FROM products WHERE sku = $1`, sku).Scan(&price)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return price, err == nil, err
}

// finish records an order attempt and settles its key in one
// transaction: with resp it completes the record (fenced by owner: a
// claim that lost its lease stores nothing), without it releases the key
// (or, with wedge, marks the record failed). ev, when set, is the order's
// event, written to the outbox in the same transaction. It reports
// whether the response was stored.
func (s *store) finish(ctx context.Context, o order, ev *paidEvent, sc scope, owner string, resp *stored, ttl time.Duration, wedge bool) (bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := insertOrder(ctx, tx, o); err != nil {
		return false, err
	}
	if ev != nil {
		if err := insertEvent(ctx, tx, *ev, sc.key); err != nil {
			return false, err
		}
	}
	kept := false
	switch {
	case resp != nil:
		header, err := json.Marshal(resp.Header)
		if err != nil {
			return false, err
		}
		tag, err := tx.Exec(ctx, `
UPDATE idempotency_records SET state = 'completed', owner = NULL, status = $6, headers = $7, body = $8,
	expires_at = now() + $9 * interval '1 millisecond'
WHERE account = $1 AND method = $2 AND path = $3 AND key = $4 AND owner = $5 AND state = 'in_progress'`,
			sc.account, sc.method, sc.path, sc.key, owner, resp.Status, header, resp.Body, ms(ttl))
		if err != nil {
			return false, fmt.Errorf("complete record: %w", err)
		}
		kept = tag.RowsAffected() == 1
	case wedge:
		if _, err := tx.Exec(ctx, `
UPDATE idempotency_records SET state = 'failed', owner = NULL
WHERE account = $1 AND method = $2 AND path = $3 AND key = $4 AND owner = $5`,
			sc.account, sc.method, sc.path, sc.key, owner); err != nil {
			return false, fmt.Errorf("mark record failed: %w", err)
		}
	default:
		if err := release(ctx, tx, sc, owner); err != nil {
			return false, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	return kept, nil
}

// executor runs a statement: the pool or a transaction.
type executor interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// insertOrder records one order attempt.
func insertOrder(ctx context.Context, db executor, o order) error {
	_, err := db.Exec(ctx, `
INSERT INTO orders (order_id, account, sku, quantity, amount, currency, reference, status, payment_id, idempotency_key, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, ''), $10, $11)`,
		o.OrderID, o.account, o.SKU, o.Quantity, o.Amount, o.Currency, o.Reference, o.Status, o.PaymentID, o.key, o.CreatedAt)
	if err != nil {
		return fmt.Errorf("insert order: %w", err)
	}
	return nil
}

// insertOrder records an order attempt outside any key's settlement.
func (s *store) insertOrder(ctx context.Context, o order) error { return insertOrder(ctx, s.pool, o) }

// release deletes the record owner holds, so the key is fresh again.
func release(ctx context.Context, db executor, sc scope, owner string) error {
	_, err := db.Exec(ctx, `
DELETE FROM idempotency_records WHERE account = $1 AND method = $2 AND path = $3 AND key = $4 AND owner = $5`,
		sc.account, sc.method, sc.path, sc.key, owner)
	if err != nil {
		return fmt.Errorf("release record: %w", err)
	}
	return nil
}

// orders lists an account's orders, newest first, optionally only those
// with a reference.
func (s *store) orders(ctx context.Context, account, reference string, limit int) ([]order, error) {
	rows, err := s.pool.Query(ctx, `
SELECT order_id, status, sku, quantity, amount, currency, reference, COALESCE(payment_id, ''), created_at
FROM orders WHERE account = $1 AND ($2 = '' OR reference = $2)
ORDER BY created_at DESC, order_id LIMIT $3`, account, reference, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (order, error) {
		var o order
		err := row.Scan(&o.OrderID, &o.Status, &o.SKU, &o.Quantity, &o.Amount, &o.Currency, &o.Reference, &o.PaymentID, &o.CreatedAt)
		o.CreatedAt = o.CreatedAt.UTC()
		return o, err
	})
}

// order reads one of an account's orders; nil when there is none.
func (s *store) order(ctx context.Context, account, id string) (*order, error) {
	var o order
	err := s.pool.QueryRow(ctx, `
SELECT order_id, status, sku, quantity, amount, currency, reference, COALESCE(payment_id, ''), created_at
FROM orders WHERE account = $1 AND order_id = $2`, account, id).
		Scan(&o.OrderID, &o.Status, &o.SKU, &o.Quantity, &o.Amount, &o.Currency, &o.Reference, &o.PaymentID, &o.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	o.CreatedAt = o.CreatedAt.UTC()
	return &o, err
}

// sweep deletes up to batch expired records (completed or failed ones
// past their TTL); in-progress records are left to their lease.
func (s *store) sweep(ctx context.Context, batch int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
DELETE FROM idempotency_records WHERE ctid IN (
	SELECT ctid FROM idempotency_records WHERE state <> 'in_progress' AND expires_at <= now() LIMIT $1)`, batch)
	return tag.RowsAffected(), err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ddl is the service's schema. request_log holds one row per
// (customer, method, request_key): who runs it until when, then its
// reply or the error kept for it. provider_calls logs every call to the
// provider with the key it ran under (the SQL view of executions).
const ddl = `
CREATE TABLE IF NOT EXISTS request_log (
	customer    text        NOT NULL,
	method      text        NOT NULL,
	request_key text        NOT NULL,
	digest      bytea       NOT NULL,
	first_sent  timestamptz,
	done        boolean     NOT NULL DEFAULT false,
	holder      uuid        NOT NULL,
	held_until  timestamptz NOT NULL,
	reply       bytea,
	failure     bytea,
	begun_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
	keep_until  timestamptz,
	CONSTRAINT request_log_pk PRIMARY KEY (customer, method, request_key)
);
CREATE TABLE IF NOT EXISTS checkout_orders (
	order_id          text PRIMARY KEY,
	customer          text        NOT NULL,
	sku               text        NOT NULL,
	quantity          integer     NOT NULL,
	amount_cents      bigint      NOT NULL,
	currency          text        NOT NULL,
	payment_reference text        NOT NULL,
	payment_id        text        NOT NULL,
	created           timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS checkout_refunds (
	refund_id          text PRIMARY KEY,
	customer           text        NOT NULL,
	payment            text        NOT NULL,
	amount_cents       bigint      NOT NULL,
	reason             text        NOT NULL,
	refund_reference   text        NOT NULL,
	provider_refund_id text        NOT NULL,
	created            timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS provider_calls (
	call_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	customer     text        NOT NULL,
	kind         text        NOT NULL,
	request_key  text,
	reference    text        NOT NULL,
	amount_cents bigint      NOT NULL,
	verdict      text        NOT NULL,
	provider_id  text,
	at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS provider_calls_request_key ON provider_calls (request_key);
`

// db is the service's PostgreSQL access. Times a lease or a retention is
// measured against are the database's clock_timestamp(), so instances on
// one database agree.
type db struct{ pool *pgxpool.Pool }

func openDB(ctx context.Context, dsn string) (*db, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("DATABASE_URL: not a PostgreSQL URL") // pgx's error quotes the password
	}
	cfg.MaxConns = 24
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	d := &db{pool: pool}
	if err := d.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return d, nil
}

// migrate creates the schema unless it exists, one instance at a time
// (concurrent CREATE TABLE IF NOT EXISTS can fail); an instance starting
// beside running ones on a current schema runs no DDL at all.
func (d *db) migrate(ctx context.Context) error {
	var have bool
	if err := d.pool.QueryRow(ctx, `SELECT to_regclass('provider_calls') IS NOT NULL`).Scan(&have); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if have {
		return nil
	}
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7081552)`); err != nil {
			return fmt.Errorf("schema lock: %w", err)
		}
		if _, err := tx.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
		return nil
	})
}

func (d *db) close() { d.pool.Close() }

// slot is what one idempotent request is recorded under, and what makes
// it the same request.
type slot struct {
	customer, method, key string
	digest                []byte
	firstSent             *time.Time // AEP-155 keys only
}

// entry is a key's row as a claim that lost finds it.
type entry struct {
	digest    []byte
	firstSent *time.Time
	done      bool
	reply     []byte // a success: the response message
	failure   []byte // a kept error: its google.rpc.Status
}

// claim takes the key for holder for lease, in one statement: a new key,
// one whose holder's lease ran out (it died), or one past its retention.
// It returns nil when it took it, else the row that holds the key (nil
// too, with taken false, when that row went away in between: try again).
func (d *db) claim(ctx context.Context, s slot, holder uuid.UUID, lease time.Duration) (taken bool, e *entry, err error) {
	var got uuid.UUID
	err = d.pool.QueryRow(ctx, `
INSERT INTO request_log AS r (customer, method, request_key, digest, first_sent, holder, held_until)
VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp() + $7 * interval '1 millisecond')
ON CONFLICT ON CONSTRAINT request_log_pk DO UPDATE
SET digest = excluded.digest, first_sent = excluded.first_sent, done = false, holder = excluded.holder,
    held_until = excluded.held_until, reply = NULL, failure = NULL, begun_at = clock_timestamp(), keep_until = NULL
WHERE (NOT r.done AND r.held_until < clock_timestamp()) OR (r.done AND r.keep_until < clock_timestamp())
RETURNING holder`, s.customer, s.method, s.key, s.digest, s.firstSent, holder, lease.Milliseconds()).Scan(&got)
	switch {
	case err == nil:
		return got == holder, nil, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return false, nil, err
	}
	e, err = d.lookup(ctx, s)
	return false, e, err
}

// lookup reads the row holding s's key (nil when there is none, or it
// is past its retention: the next claim takes it over).
func (d *db) lookup(ctx context.Context, s slot) (*entry, error) {
	e := &entry{}
	err := d.pool.QueryRow(ctx, `
SELECT digest, first_sent, done, reply, failure FROM request_log
WHERE customer = $1 AND method = $2 AND request_key = $3 AND (NOT done OR keep_until >= clock_timestamp())`,
		s.customer, s.method, s.key).Scan(&e.digest, &e.firstSent, &e.done, &e.reply, &e.failure)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return e, err
}

// insertFirst is the check-then-insert build's claim: a lookup, then an
// insert that does nothing when the key exists (which it does not look
// at), so requests arriving together all find no row and all run.
func (d *db) insertFirst(ctx context.Context, s slot, holder uuid.UUID, lease time.Duration) (taken bool, e *entry, err error) {
	if e, err = d.lookup(ctx, s); err != nil || e != nil {
		return false, e, err
	}
	_, err = d.pool.Exec(ctx, `
INSERT INTO request_log (customer, method, request_key, digest, first_sent, holder, held_until)
VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp() + $7 * interval '1 millisecond')
ON CONFLICT ON CONSTRAINT request_log_pk DO NOTHING`, s.customer, s.method, s.key, s.digest, s.firstSent, holder, lease.Milliseconds())
	return err == nil, nil, err
}

// complete stores the outcome of holder's execution of s (a reply or a
// kept failure), kept for ttl, with rows (the order or refund) written in
// the same transaction. It reports false, writing nothing, when holder
// no longer holds the key (its lease ran out and another took it over).
func (d *db) complete(ctx context.Context, s slot, holder uuid.UUID, reply, failure []byte, ttl time.Duration, rows func(pgx.Tx) error) (bool, error) {
	held := false
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
UPDATE request_log SET done = true, reply = $5, failure = $6, keep_until = clock_timestamp() + $7 * interval '1 millisecond'
WHERE customer = $1 AND method = $2 AND request_key = $3 AND holder = $4 AND NOT done`,
			s.customer, s.method, s.key, holder, reply, failure, ttl.Milliseconds())
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		held = true
		if rows != nil {
			return rows(tx)
		}
		return nil
	})
	return held && err == nil, err
}

// overwrite is the execute-on-mismatch build's: the newer request's
// digest and outcome replace the record, whoever held it.
func (d *db) overwrite(ctx context.Context, s slot, reply, failure []byte, ttl time.Duration, rows func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
UPDATE request_log SET digest = $4, done = true, reply = $5, failure = $6, keep_until = clock_timestamp() + $7 * interval '1 millisecond'
WHERE customer = $1 AND method = $2 AND request_key = $3`, s.customer, s.method, s.key, s.digest, reply, failure, ttl.Milliseconds()); err != nil {
			return err
		}
		if rows != nil {
			return rows(tx)
		}
		return nil
	})
}

// release gives the key up after a failure that is not the request's
// outcome (the provider unavailable or silent), so a retry runs again.
func (d *db) release(ctx context.Context, s slot, holder uuid.UUID) error {
	_, err := d.pool.Exec(ctx, `DELETE FROM request_log WHERE customer = $1 AND method = $2 AND request_key = $3 AND holder = $4 AND NOT done`,
		s.customer, s.method, s.key, holder)
	return err
}

// logCall records one provider call, whatever it came to.
func (d *db) logCall(ctx context.Context, customer, kind, key, reference string, amount int64, a providerAnswer) error {
	var k *string
	if key != "" {
		k = &key
	}
	var id *string
	if a.id != "" {
		id = &a.id
	}
	_, err := d.pool.Exec(ctx, `INSERT INTO provider_calls (customer, kind, request_key, reference, amount_cents, verdict, provider_id) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		customer, kind, k, reference, amount, a.verdict.String(), id)
	return err
}

func (v verdict) String() string {
	return [...]string{"accepted", "refused", "unknown", "no_answer"}[v]
}

// sweep deletes rows past their retention every period until ctx ends.
func (d *db) sweep(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = d.pool.Exec(ctx, `DELETE FROM request_log WHERE done AND keep_until < clock_timestamp() - interval '1 minute'`)
		}
	}
}

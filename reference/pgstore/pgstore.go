package pgstore

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/reference"
)

//go:embed schema.sql
var schema string

// migrationLock is the advisory lock key serialising schema migrations.
const migrationLock = 0x1de3c4ec

// Store is a reference.Store and reference.Atomic on PostgreSQL.
type Store struct {
	pool *pgxpool.Pool
	cfg  config

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// Option configures Open.
type Option func(*config)

type config struct {
	connectTimeout time.Duration
	maxConns       int32
	minConns       int32
	cleanupEvery   time.Duration
	cleanupBatch   int
}

// WithConnectTimeout bounds each connection attempt (default 5s).
func WithConnectTimeout(d time.Duration) Option { return func(c *config) { c.connectTimeout = d } }

// WithMaxConns sets the pool size (default: 2 per CPU, at least 8). A
// request holds a connection for one statement or batch at a time (a unit
// of work holds none while the handler runs), so the pool needs about
// rate × statement time connections; past the pool size, requests queue.
func WithMaxConns(n int32) Option { return func(c *config) { c.maxConns = n } }

// WithMinConns sets how many connections the pool keeps open even when
// idle (default: the pool size). A burst then finds them open: opening one
// mid-burst (a server process start) put hundreds of milliseconds into the
// p99 of a fresh server at 1,000 req/s on two cores.
func WithMinConns(n int32) Option { return func(c *config) { c.minConns = n } }

// WithCleanup sets how often expired records are deleted and how many rows
// one DELETE removes at most (defaults 1 minute, 1000 rows).
func WithCleanup(every time.Duration, batch int) Option {
	return func(c *config) { c.cleanupEvery, c.cleanupBatch = every, batch }
}

// Open connects to dsn, migrates the schema and starts the cleanup. A bad
// DSN or an unreachable server fails within the connect timeout with one
// line saying which.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	c := config{connectTimeout: 5 * time.Second, maxConns: int32(max(8, 2*runtime.GOMAXPROCS(0))), minConns: -1,
		cleanupEvery: time.Minute, cleanupBatch: 1000}
	for _, o := range opts {
		o(&c)
	}
	if c.minConns < 0 {
		c.minConns = c.maxConns
	}
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: invalid DSN: %w", err)
	}
	pc.ConnConfig.ConnectTimeout = c.connectTimeout
	pc.MaxConns = c.maxConns
	pc.MinConns = min(c.minConns, c.maxConns)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	mctx, cancel := context.WithTimeout(ctx, c.connectTimeout+10*time.Second)
	defer cancel()
	if err := migrate(mctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres %s:%d: %w", pc.ConnConfig.Host, pc.ConnConfig.Port, err)
	}
	s := &Store{pool: pool, cfg: c, stop: make(chan struct{}), done: make(chan struct{})}
	go s.cleanupLoop()
	return s, nil
}

// schemaCurrent is true when every object schema.sql creates exists: its
// last index on each table and the columns added later. Keep it in step
// with schema.sql.
const schemaCurrent = `SELECT to_regclass('idempotency_records_expires_at') IS NOT NULL
    AND to_regclass('charges_principal_key') IS NOT NULL
    AND to_regclass('outbox_unsent') IS NOT NULL
    AND EXISTS (SELECT 1 FROM pg_attribute
                WHERE attrelid = to_regclass('idempotency_records') AND attname = 'raw_hash' AND NOT attisdropped)
    AND EXISTS (SELECT 1 FROM pg_attribute
                WHERE attrelid = to_regclass('charges') AND attname = 'api_version' AND NOT attisdropped)`

// migrate brings the schema up to date. When it already is, it runs no
// DDL: ALTER TABLE and CREATE INDEX lock the tables even when there is
// nothing to do, and a replica restarting beside a serving one then
// deadlocked with its completions (records, then charges) and exited
// (SQLSTATE 40P01, seen in TestChaosReplicaKills).
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	var current bool
	if err := pool.QueryRow(ctx, schemaCurrent).Scan(&current); err != nil {
		return err
	}
	if current {
		return nil
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schema)
		return err
	})
}

// Pool is the store's connection pool (the ledger and tests share it).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// unavailable wraps a database error so the middleware answers 503.
func unavailable(err error) error {
	return fmt.Errorf("%w: postgres: %w", reference.ErrUnavailable, err)
}

const liveCond = `expires_at > now() AND (state = 2 OR locked_until > now())`

const recordCols = `state, fingerprint, raw_hash, token, status, header, body, created_at, locked_until, expires_at`

const scopeCond = `principal = $1 AND method = $2 AND path = $3 AND key = $4`

// claimSQL is the whole claim in one round trip: the upsert takes the
// scope when it is free, expired or its lease ended (first branch: the new
// token); otherwise the live row comes back (second branch), so a replay
// costs one statement. The second branch reads the statement's snapshot:
// a row committed after it began (a concurrent claim) is not there, and
// the statement returns nothing; Claim then tries again.
const claimSQL = `
WITH ins AS (
INSERT INTO idempotency_records AS r
    (principal, method, path, key, state, fingerprint, raw_hash, token, created_at, locked_until, expires_at)
VALUES ($1, $2, $3, $4, 1, $5, $6, $7, now(), now() + $8 * interval '1 microsecond', now() + $9 * interval '1 microsecond')
ON CONFLICT (principal, method, path, key) DO UPDATE
SET state = 1, fingerprint = EXCLUDED.fingerprint, raw_hash = EXCLUDED.raw_hash, token = EXCLUDED.token,
    status = NULL, header = NULL, body = NULL, created_at = EXCLUDED.created_at,
    locked_until = EXCLUDED.locked_until, expires_at = EXCLUDED.expires_at
WHERE r.expires_at <= now() OR (r.state = 1 AND r.locked_until <= now())
RETURNING token)
SELECT true, NULL::smallint, '', '', token, NULL::integer, NULL::bytea, NULL::bytea, now(), now(), now() FROM ins
UNION ALL
SELECT false, ` + recordCols + ` FROM idempotency_records
WHERE ` + scopeCond + ` AND ` + liveCond + ` AND NOT EXISTS (SELECT 1 FROM ins)`

const lookupSQL = `SELECT false, ` + recordCols + ` FROM idempotency_records WHERE ` + scopeCond + ` AND ` + liveCond

// Claim implements reference.Store, in one statement per try. A try that
// finds neither a free scope nor a live row (the row appeared or went away
// while the statement ran) is repeated a bounded number of times.
func (s *Store) Claim(ctx context.Context, req reference.ClaimRequest) (reference.Claim, error) {
	sc := req.Scope
	for attempt := 0; attempt < 5; attempt++ {
		rec, claimed, err := scanRecord(s.pool.QueryRow(ctx, claimSQL, sc.Principal, sc.Method, sc.Path, sc.Key,
			req.Fingerprint, req.RawHash, newToken(), req.Lease.Microseconds(), req.TTL.Microseconds()))
		switch {
		case err != nil:
			return reference.Claim{}, err
		case claimed:
			return reference.Claim{Outcome: reference.Claimed, Token: rec.Token}, nil
		case rec != nil:
			return reference.Claim{Outcome: reference.Existing, Record: rec}, nil
		}
	}
	return reference.Claim{}, unavailable(errors.New("claim kept racing with release or expiry"))
}

// scanRecord reads one row of (claimed, recordCols): nil and no error when
// there is none.
func scanRecord(row pgx.Row) (rec *reference.Record, claimed bool, err error) {
	var (
		r      reference.Record
		state  *int16
		status *int32
		header []byte
	)
	err = row.Scan(&claimed, &state, &r.Fingerprint, &r.RawHash, &r.Token, &status, &header, &r.Response.Body,
		&r.CreatedAt, &r.LockedUntil, &r.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unavailable(err)
	}
	if state != nil {
		r.State = reference.State(*state)
	}
	if status != nil {
		r.Response.Status = int(*status)
	}
	if len(header) > 0 {
		if err := json.Unmarshal(header, &r.Response.Header); err != nil {
			return nil, false, fmt.Errorf("postgres: decode stored header: %w", err)
		}
	}
	return &r, claimed, nil
}

const completeSQL = `
UPDATE idempotency_records SET state = 2, status = $6, header = $7, body = $8
WHERE principal = $1 AND method = $2 AND path = $3 AND key = $4 AND token = $5 AND state = 1`

// Complete implements reference.Store (the middleware completes through a
// unit of work instead: unit.Commit).
func (s *Store) Complete(ctx context.Context, sc reference.Scope, token string, resp reference.Response) error {
	header, err := json.Marshal(resp.Header)
	if err != nil {
		return fmt.Errorf("postgres: encode header: %w", err)
	}
	tag, err := s.pool.Exec(ctx, completeSQL, sc.Principal, sc.Method, sc.Path, sc.Key, token,
		resp.Status, header, resp.Body)
	if err != nil {
		return unavailable(err)
	}
	if tag.RowsAffected() == 0 {
		return reference.ErrNotOwner
	}
	return nil
}

// Release implements reference.Store.
func (s *Store) Release(ctx context.Context, sc reference.Scope, token string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_records
WHERE principal = $1 AND method = $2 AND path = $3 AND key = $4 AND token = $5 AND state = 1`,
		sc.Principal, sc.Method, sc.Path, sc.Key, token)
	if err != nil {
		return unavailable(err)
	}
	if tag.RowsAffected() == 0 {
		return reference.ErrNotOwner
	}
	return nil
}

// Lookup implements reference.Store.
func (s *Store) Lookup(ctx context.Context, sc reference.Scope) (*reference.Record, error) {
	rec, _, err := scanRecord(s.pool.QueryRow(ctx, lookupSQL, sc.Principal, sc.Method, sc.Path, sc.Key))
	return rec, err
}

// cleanupLoop deletes expired records in bounded batches until Close.
func (s *Store) cleanupLoop() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.cleanupEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_, _ = s.Cleanup(context.Background())
		}
	}
}

// Cleanup deletes expired records now, at most 100 batches, and says how
// many it deleted. The background loop calls it; tests may too.
func (s *Store) Cleanup(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	go func() {
		// Close interrupts a long cleanup.
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var total int64
	for i := 0; i < 100; i++ {
		tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_records WHERE ctid IN (
    SELECT ctid FROM idempotency_records WHERE expires_at <= now() LIMIT $1)`, s.cfg.cleanupBatch)
		if err != nil {
			return total, unavailable(err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(s.cfg.cleanupBatch) {
			break
		}
	}
	// Sent outbox rows are kept an hour (SentEvents reads the latest).
	if _, err := s.pool.Exec(ctx, `DELETE FROM outbox WHERE sent_at < now() - interval '1 hour'`); err != nil {
		return total, unavailable(err)
	}
	return total, nil
}

// Close stops the cleanup and closes the pool. It is safe to call twice.
func (s *Store) Close() error {
	s.stopOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.pool.Close()
	})
	return nil
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

var (
	_ reference.Store      = (*Store)(nil)
	_ reference.Atomic     = (*Store)(nil)
	_ reference.EventStore = (*Store)(nil)
)

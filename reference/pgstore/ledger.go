package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/idemcheck/idemcheck/reference/demo"
)

// Ledger is the demo app's demo.Ledger in the store's database. Inside a
// unit of work (the handler's context carries it) a charge is queued in
// the unit and written with the completed idempotency record, in one
// transaction, or not at all.
type Ledger struct{ s *Store }

// NewLedger returns the ledger sharing s's pool; closing it is a no-op, the
// store owns the pool.
func NewLedger(s *Store) *Ledger { return &Ledger{s: s} }

// CommitsWithRecord implements demo.CommitsWithRecord: inside a unit of
// work a charge commits or rolls back with its idempotency record.
func (l *Ledger) CommitsWithRecord() bool { return true }

const insertChargeSQL = `INSERT INTO charges
    (id, object, principal, amount, currency, description, idempotency_key, created, captured, api_version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`

// Insert implements demo.Ledger. Inside a unit of work the charge is
// queued; a failure to write it then fails the unit's Commit.
func (l *Ledger) Insert(ctx context.Context, c demo.Charge) error {
	args := []any{c.ID, c.Object, c.Principal, c.Amount, c.Currency, c.Description, c.IdempotencyKey, c.Created, c.Captured, c.APIVersion}
	if u, ok := unitFrom(ctx); ok {
		u.pending.Queue(insertChargeSQL, args...)
		return nil
	}
	_, err := l.s.pool.Exec(ctx, insertChargeSQL, args...)
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// Get implements demo.Ledger; it does not see charges still queued in a
// unit of work.
func (l *Ledger) Get(ctx context.Context, principal, id string) (demo.Charge, bool, error) {
	c := demo.Charge{ID: id, Principal: principal}
	err := l.s.pool.QueryRow(ctx, `SELECT object, amount, currency, description, idempotency_key, created, captured, api_version
FROM charges WHERE id = $1 AND principal = $2`, id, principal).Scan(
		&c.Object, &c.Amount, &c.Currency, &c.Description, &c.IdempotencyKey, &c.Created, &c.Captured, &c.APIVersion)
	if errors.Is(err, pgx.ErrNoRows) {
		return demo.Charge{}, false, nil
	}
	if err != nil {
		return demo.Charge{}, false, unavailable(err)
	}
	return c, true, nil
}

// Count says how many charges principal's key produced (the exactly-once
// oracle of the crash test).
func (l *Ledger) Count(ctx context.Context, principal, key string) (int, error) {
	var n int
	err := l.s.pool.QueryRow(ctx, `SELECT count(*) FROM charges WHERE principal = $1 AND idempotency_key = $2`,
		principal, key).Scan(&n)
	if err != nil {
		return 0, unavailable(err)
	}
	return n, nil
}

// Close implements demo.Ledger.
func (l *Ledger) Close() error { return nil }

var _ demo.Ledger = (*Ledger)(nil)

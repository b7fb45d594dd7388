package pgstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcheck/idemcheck/reference"
)

const insertEventSQL = `INSERT INTO outbox (id, key, type, payload) VALUES ($1, $2, $3, $4)`

func queueEvents(b *pgx.Batch, events []reference.Event) {
	for _, e := range events {
		b.Queue(insertEventSQL, e.ID, e.Key, e.Type, e.Payload)
	}
}

// AddEvents implements reference.EventUnit: the outbox rows are queued in
// the unit, to commit with its effects and the record in one transaction.
func (u *unit) AddEvents(events []reference.Event) { queueEvents(&u.pending, events) }

// CompleteWithEvents implements reference.EventStore, in one batch (one
// implicit transaction, see unit). The middleware completes through a
// unit of work instead.
func (s *Store) CompleteWithEvents(ctx context.Context, sc reference.Scope, token string, resp reference.Response, events []reference.Event) error {
	u := &unit{s: s, scope: sc, token: token}
	u.AddEvents(events)
	return u.Commit(ctx, resp)
}

// AppendEvents implements reference.EventStore.
func (s *Store) AppendEvents(ctx context.Context, events []reference.Event) error {
	var b pgx.Batch
	queueEvents(&b, events)
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return unavailable(err)
	}
	return nil
}

// claimEventsSQL claims up to $1 unsent rows whose claim ended, for $2
// microseconds; SKIP LOCKED lets relays of several replicas claim side by
// side.
const claimEventsSQL = `UPDATE outbox SET claimed_until = now() + $2 * interval '1 microsecond'
WHERE seq IN (SELECT seq FROM outbox
    WHERE sent_at IS NULL AND (claimed_until IS NULL OR claimed_until <= now())
    ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED)
RETURNING seq, id, key, type, payload`

// ClaimEvents implements reference.EventStore.
func (s *Store) ClaimEvents(ctx context.Context, n int, lease time.Duration) ([]reference.Event, error) {
	return s.queryEvents(ctx, claimEventsSQL, n, lease.Microseconds())
}

// MarkSent implements reference.EventStore.
func (s *Store) MarkSent(ctx context.Context, ids []string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE outbox SET sent_at = now() WHERE id = ANY($1)`, ids); err != nil {
		return unavailable(err)
	}
	return nil
}

// SentEvents implements reference.EventStore.
func (s *Store) SentEvents(ctx context.Context, n int) ([]reference.Event, error) {
	return s.queryEvents(ctx, `SELECT seq, id, key, type, payload FROM outbox
WHERE sent_at IS NOT NULL ORDER BY seq DESC LIMIT $1`, n)
}

// queryEvents runs a query returning (seq, id, key, type, payload) rows
// and gives the events in seq order.
func (s *Store) queryEvents(ctx context.Context, sql string, args ...any) ([]reference.Event, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, unavailable(err)
	}
	type row struct {
		seq int64
		ev  reference.Event
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.seq, &x.ev.ID, &x.ev.Key, &x.ev.Type, &x.ev.Payload)
		return x, err
	})
	if err != nil {
		return nil, unavailable(err)
	}
	slices.SortFunc(rs, func(a, b row) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]reference.Event, len(rs))
	for i, x := range rs {
		out[i] = x.ev
	}
	return out, nil
}

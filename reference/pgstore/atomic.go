package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemcheck/idemcheck/reference"
)

// unitKey finds the open unit of work in a handler's context.
type unitKey struct{}

// unitFrom returns the unit of work Begin put in ctx, if any.
func unitFrom(ctx context.Context) (*unit, bool) {
	u, ok := ctx.Value(unitKey{}).(*unit)
	return u, ok
}

// unit is one handler's unit of work. Its writes are queued, not sent: at
// Commit they leave in one batch with the record's completion, and
// PostgreSQL runs a batch (a pipeline up to its one Sync) as one implicit
// transaction, so the effects and the completed record commit together or
// not at all, in one round trip, and no connection is held while the
// handler runs. The record row is not locked meanwhile either: a
// concurrent retry sees it in flight and gets 409 rather than waiting.
// The cost: the handler cannot read its own queued writes back.
type unit struct {
	s       *Store
	scope   reference.Scope
	token   string
	pending pgx.Batch
}

// Begin implements reference.Atomic; it does not touch the database.
func (s *Store) Begin(ctx context.Context, scope reference.Scope, token string) (reference.Unit, context.Context, error) {
	u := &unit{s: s, scope: scope, token: token}
	return u, context.WithValue(ctx, unitKey{}, u), nil
}

// completeOwnedSQL completes the record inside a unit's batch. When token
// no longer owns the record (its lease ended and another request
// reclaimed it), count(*) is 0 and the division fails with
// division_by_zero, which aborts the whole batch: the effects roll back
// with it, and Commit reports ErrNotOwner.
const completeOwnedSQL = `
WITH done AS (
UPDATE idempotency_records SET state = 2, status = $6, header = $7, body = $8
WHERE principal = $1 AND method = $2 AND path = $3 AND key = $4 AND token = $5 AND state = 1
RETURNING 1)
SELECT 1 / count(*) FROM done`

// Commit implements reference.Unit: the queued effects and the record's
// completion, in one batch (see unit). The other owner's effect is the
// one that counts when the claim was lost: ErrNotOwner, nothing written.
func (u *unit) Commit(ctx context.Context, resp reference.Response) error {
	header, err := json.Marshal(resp.Header)
	if err != nil {
		return fmt.Errorf("postgres: encode header: %w", err)
	}
	sc := u.scope
	u.pending.Queue(completeOwnedSQL, sc.Principal, sc.Method, sc.Path, sc.Key, u.token, resp.Status, header, resp.Body)
	err = u.s.pool.SendBatch(ctx, &u.pending).Close()
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pgErr) && pgErr.Code == "22012": // division_by_zero: see completeOwnedSQL
		return reference.ErrNotOwner
	default:
		return unavailable(err)
	}
}

// Rollback implements reference.Unit: the queued writes are dropped.
func (u *unit) Rollback(context.Context) error {
	u.pending = pgx.Batch{}
	return nil
}

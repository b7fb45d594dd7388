package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/idemcheck/idemcheck/reference"
)

// txKey finds the open unit of work's transaction in a handler's context.
type txKey struct{}

// txFrom returns the transaction a unit of work put in ctx, if any.
func txFrom(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	return tx, ok
}

// unit is one handler's transaction. The record row is not locked while
// the handler runs (a concurrent retry must see it in flight and get 409,
// not wait); fencing happens at Commit, where the completion UPDATE only
// matches while token still owns the record.
type unit struct {
	tx    pgx.Tx
	scope reference.Scope
	token string
}

// Begin implements reference.Atomic.
func (s *Store) Begin(ctx context.Context, scope reference.Scope, token string) (reference.Unit, context.Context, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, ctx, unavailable(err)
	}
	return &unit{tx: tx, scope: scope, token: token}, context.WithValue(ctx, txKey{}, tx), nil
}

// Commit implements reference.Unit: the record is completed inside the
// handler's transaction and both commit together. When the claim was lost
// (lease ended and another request reclaimed it), everything rolls back and
// ErrNotOwner is returned: the other owner's effect is the one that counts.
func (u *unit) Commit(ctx context.Context, resp reference.Response) error {
	if err := complete(ctx, u.tx, u.scope, u.token, resp); err != nil {
		_ = u.tx.Rollback(ctx)
		return err
	}
	if err := u.tx.Commit(ctx); err != nil {
		return unavailable(err)
	}
	return nil
}

// Rollback implements reference.Unit.
func (u *unit) Rollback(ctx context.Context) error {
	if err := u.tx.Rollback(ctx); err != nil && err != pgx.ErrTxClosed {
		return unavailable(err)
	}
	return nil
}

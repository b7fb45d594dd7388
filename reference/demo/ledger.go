package demo

import (
	"context"
	"time"
)

// Charge is one effect of the demo API: a created charge or refund.
type Charge struct {
	ID          string `json:"id"`
	Object      string `json:"object"` // "charge" or "refund"
	Principal   string `json:"-"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Description string `json:"description,omitempty"`
	// Captured: a charge's funds were taken (false: ?capture=false, an
	// authorisation only); unset for refunds.
	Captured *bool `json:"captured,omitempty"`
	// APIVersion is the Api-Version the request was made under, if any.
	APIVersion     string    `json:"api_version,omitempty"`
	IdempotencyKey string    `json:"-"`
	Created        time.Time `json:"created"`
}

// Ledger stores the demo API's effects. The memory ledger is the default;
// the PostgreSQL ledger writes inside the idempotency store's unit of work
// (reference.Atomic) found in ctx, so effect and record commit together.
type Ledger interface {
	// Insert records a new charge or refund.
	Insert(ctx context.Context, c Charge) error
	// Get returns the charge with id owned by principal.
	Get(ctx context.Context, principal, id string) (Charge, bool, error)
	// Close releases the ledger's resources.
	Close() error
}

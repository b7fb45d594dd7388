package main

import (
	"context"
	"fmt"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// storeFlags are the connection settings of the external stores.
type storeFlags struct {
	DSN      string // PostgreSQL connection string (--dsn)
	RedisURL string // Redis URL (--redis-url)
}

// openStore opens the idempotency store and the ledger named by kind. The
// returned close function releases both.
func openStore(ctx context.Context, kind string, f *storeFlags) (reference.Store, demo.Ledger, func() error, error) {
	_ = ctx // the memory store needs no connection; external stores dial with it
	_ = f
	switch kind {
	case "memory":
		s := memstore.New()
		l := demo.NewMemoryLedger()
		return s, l, func() error { return s.Close() }, nil
	default:
		return nil, nil, nil, fmt.Errorf("--store %q: unknown store (known: memory)", kind)
	}
}

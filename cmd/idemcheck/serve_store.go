package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/memstore"
	"github.com/idemcheck/idemcheck/reference/pgstore"
	"github.com/idemcheck/idemcheck/reference/redisstore"
)

// storeFlags are the connection settings of the external stores.
type storeFlags struct {
	DSN      string // PostgreSQL connection string (--dsn)
	RedisURL string // Redis URL (--redis-url)
	// PostgreSQL pool bounds (--pg-max-conns, --pg-min-conns).
	PGMaxConns, PGMinConns int32
}

// storeOpenTimeout bounds connecting to an external store at start.
const storeOpenTimeout = 10 * time.Second

// openStore opens the idempotency store and the ledger named by kind. The
// returned close function releases both. Errors are one line (a bad DSN,
// a server that is down) so that serve can exit 2 with them.
func openStore(ctx context.Context, kind string, f *storeFlags) (reference.Store, demo.Ledger, func() error, error) {
	switch kind {
	case "memory":
		s := memstore.New()
		l := demo.NewMemoryLedger()
		return s, l, func() error { return s.Close() }, nil
	case "postgres":
		if f.DSN == "" {
			return nil, nil, nil, fmt.Errorf("--dsn: required with --store postgres")
		}
		ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
		defer cancel()
		var opts []pgstore.Option // zero values: the store's defaults
		if f.PGMaxConns > 0 {
			opts = append(opts, pgstore.WithMaxConns(f.PGMaxConns))
		}
		if f.PGMinConns > 0 {
			opts = append(opts, pgstore.WithMinConns(f.PGMinConns))
		}
		s, err := pgstore.Open(ctx, f.DSN, opts...)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--store postgres: %s", oneLine(err))
		}
		// Charges go to the same database, in the record's transaction.
		return s, pgstore.NewLedger(s), s.Close, nil
	case "redis":
		if f.RedisURL == "" {
			return nil, nil, nil, fmt.Errorf("--redis-url: required with --store redis")
		}
		// go-redis logs every failed dial; the store's errors already say it.
		redis.SetLogger(discardLogger{})
		ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
		defer cancel()
		s, err := redisstore.Open(ctx, f.RedisURL)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--store redis: %s", oneLine(err))
		}
		// Redis cannot share a transaction with the effect: charges stay in
		// memory, and the record alone carries the idempotency guarantee.
		return s, demo.NewMemoryLedger(), s.Close, nil
	default:
		return nil, nil, nil, fmt.Errorf("--store %q: unknown store (known: memory, postgres, redis)", kind)
	}
}

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

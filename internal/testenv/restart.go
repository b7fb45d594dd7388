package testenv

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RestartablePostgres is a dedicated local PostgreSQL server a test may
// stop and start again on the same port and data directory (a database
// outage). Only local binaries can do this.
type RestartablePostgres struct {
	mu  sync.Mutex
	pg  *localPostgres
	dsn string
}

// RequireRestartablePostgres starts a dedicated local PostgreSQL server,
// removed when the test ends. It skips (or fails under
// IDEMCHECK_REQUIRE_STORES=1) without the server binaries.
func RequireRestartablePostgres(t testing.TB) *RestartablePostgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	pg, err := startLocalPostgres(ctx)
	if err != nil {
		unavailable(t, "restartable postgres", err)
	}
	rp := &RestartablePostgres{pg: pg, dsn: pg.dsn}
	t.Cleanup(func() {
		rp.mu.Lock()
		defer rp.mu.Unlock()
		rp.pg.stop() // stops it if running, removes the directory
	})
	return rp
}

// DSN is the server's connection string; it stays valid across restarts.
func (rp *RestartablePostgres) DSN() string { return rp.dsn }

// Stop shuts the server down (fast shutdown: sessions are cut, committed
// data is kept) and waits for it to exit.
func (rp *RestartablePostgres) Stop() {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	_ = rp.pg.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-rp.pg.done:
	case <-time.After(10 * time.Second):
		rp.pg.kill()
	}
}

// Start runs the server again on the same port and data directory.
func (rp *RestartablePostgres) Start(ctx context.Context) error {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	select {
	case <-rp.pg.done:
	default:
		return errors.New("restartable postgres: still running")
	}
	pg, err := runPostgresOn(ctx, rp.pg.bin, rp.pg.dir, rp.pg.cred, rp.pg.port)
	if err != nil {
		return err
	}
	rp.pg = pg
	return nil
}

// RequireDurableRedis is RequireRestartableRedis with an append-only file
// synced on every write: after Kill and Restart, every acknowledged write
// is back, as a production Redis holding idempotency records must be.
func RequireDurableRedis(t testing.TB) *RedisServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := startRedis(ctx, true)
	if err != nil {
		unavailable(t, "durable redis", err)
	}
	t.Cleanup(rs.Stop)
	return rs
}

package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/freeport"
)

// Redis provides a Redis server: IDEMCHECK_REDIS_URL, else Docker, else a
// local redis-server in a temp dir. See Postgres for the results.
func Redis(ctx context.Context) (url string, stop func(), how string, err error) {
	if u := os.Getenv("IDEMCHECK_REDIS_URL"); u != "" {
		return u, func() {}, HowEnv, nil
	}
	var reasons []string
	if derr := dockerAvailable(); derr == nil {
		u, stop, err := dockerRedis(ctx)
		if err == nil {
			return u, stop, HowDocker, nil
		}
		reasons = append(reasons, err.Error())
	} else {
		reasons = append(reasons, derr.Error())
	}
	rs, err := StartRedis(ctx)
	if err == nil {
		return rs.URL(), rs.Stop, HowLocal, nil
	}
	reasons = append(reasons, err.Error())
	return "", nil, "", fmt.Errorf("%w: redis: %s", ErrUnavailable, joinReasons(reasons))
}

// RedisServer is a redis-server child process that can be restarted on the
// same port (outage tests). Unless durable (RequireDurableRedis) it keeps
// nothing on disk: a restart loses every key, like a crash of a Redis
// without persistence.
type RedisServer struct {
	bin     string
	dir     string
	port    int
	durable bool

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis starts a local redis-server on a free loopback port.
func StartRedis(ctx context.Context) (*RedisServer, error) { return startRedis(ctx, false) }

// startRedis starts a local redis-server; durable turns on an append-only
// file fsynced on every write.
func startRedis(ctx context.Context, durable bool) (*RedisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("local redis: no redis-server on PATH (install redis-server)")
	}
	dir, err := makeTempDir("idemcheck-redis-")
	if err != nil {
		return nil, fmt.Errorf("local redis: %w", err)
	}
	rs := &RedisServer{bin: bin, dir: dir, durable: durable}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if rs.port, err = freeport.Loopback(); err != nil {
			lastErr = err
			continue
		}
		if lastErr = rs.start(ctx); lastErr == nil {
			return rs, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("local redis: %w", lastErr)
}

// URL is the redis:// address of the server.
func (rs *RedisServer) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", rs.port) }

// Addr is host:port of the server.
func (rs *RedisServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(rs.port)) }

func (rs *RedisServer) start(ctx context.Context) error {
	persist := []string{"--appendonly", "no"}
	if rs.durable {
		persist = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	cmd := exec.Command(rs.bin, append([]string{"--port", strconv.Itoa(rs.port), "--bind", "127.0.0.1",
		"--save", "", "--dir", rs.dir, "--daemonize", "no", "--logfile", ""}, persist...)...)
	cmd.Dir = rs.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	rs.mu.Lock()
	rs.cmd, rs.done = cmd, done
	rs.mu.Unlock()
	// A raw TCP probe: go-redis backs off after dial errors and would make
	// every start take ~100 ms.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("redis-server exited at start (port %d)", rs.port)
		case <-ctx.Done():
			rs.Stop()
			return ctx.Err()
		default:
		}
		c, err := net.DialTimeout("tcp", rs.Addr(), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	rs.kill()
	return errors.New("redis-server not ready after 10s")
}

func (rs *RedisServer) kill() {
	rs.mu.Lock()
	cmd, done := rs.cmd, rs.done
	rs.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// Kill stops the server abruptly (SIGKILL), keeping its port for Restart.
func (rs *RedisServer) Kill() { rs.kill() }

// Restart starts the server again on the same port after Kill.
func (rs *RedisServer) Restart(ctx context.Context) error {
	rs.kill()
	return rs.start(ctx)
}

// Stop ends the server and removes its directory.
func (rs *RedisServer) Stop() {
	rs.mu.Lock()
	cmd, done := rs.cmd, rs.done
	rs.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			rs.kill()
		}
	}
	os.RemoveAll(rs.dir)
}

var (
	redisOnce  sync.Once
	redisURL   string
	redisStop  func()
	redisHow   string
	redisErr   error
	redisCount atomic.Int64
)

// RequireRedis returns the URL of the test binary's shared Redis server.
// Tests sharing it keep apart with KeyPrefix. It skips t when no server is
// available, or fails it under IDEMCHECK_REQUIRE_STORES=1.
func RequireRedis(t testing.TB) string {
	t.Helper()
	redisOnce.Do(func() {
		redisURL, redisStop, redisHow, redisErr = Redis(context.Background())
		if redisErr == nil {
			fmt.Fprintf(os.Stderr, "testenv: redis via %s\n", redisHow)
		}
	})
	if redisErr != nil {
		unavailable(t, "redis", redisErr)
	}
	return redisURL
}

// RedisHow says how the shared server was provided ("" before first use).
func RedisHow() string { return redisHow }

// KeyPrefix is a key prefix no other test of this run uses.
func KeyPrefix(t testing.TB) string {
	return fmt.Sprintf("t%d-%d:", os.Getpid(), redisCount.Add(1))
}

// RequireRestartableRedis starts a dedicated local redis-server that the
// test may Kill and Restart on the same port; it is stopped when the test
// ends. Only local binaries can do this, so it skips (or fails under
// IDEMCHECK_REQUIRE_STORES=1) without redis-server.
func RequireRestartableRedis(t testing.TB) *RedisServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := StartRedis(ctx)
	if err != nil {
		unavailable(t, "restartable redis", err)
	}
	t.Cleanup(rs.Stop)
	return rs
}

// stopShared stops the servers RequirePostgres, RequireRedis,
// RequireMySQL and RequireRedpanda started.
func stopShared() {
	if pgStop != nil {
		pgStop()
	}
	if redisStop != nil {
		redisStop()
	}
	if myStop != nil {
		myStop()
	}
	if redpandaStop != nil {
		redpandaStop()
	}
}

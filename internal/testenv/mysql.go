package testenv

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/idemcheck/idemcheck/internal/freeport"
)

// MySQL provides a MySQL-compatible server: IDEMCHECK_MYSQL_DSN (a
// go-sql-driver DSN, user:pass@tcp(host:port)/), else the local MariaDB
// binaries (apt-get install mariadb-server) in a temp dir. The DSN names no
// database. When none works, err wraps ErrUnavailable.
func MySQL(ctx context.Context) (dsn string, stop func(), how string, err error) {
	if dsn := os.Getenv("IDEMCHECK_MYSQL_DSN"); dsn != "" {
		return dsn, func() {}, HowEnv, nil
	}
	m, err := startLocalMariaDB(ctx)
	if err != nil {
		return "", nil, "", fmt.Errorf("%w: mysql: %v", ErrUnavailable, err)
	}
	return m.dsn, m.stop, HowLocal, nil
}

type localMariaDB struct {
	dir  string
	dsn  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startLocalMariaDB(ctx context.Context) (*localMariaDB, error) {
	install, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		return nil, errors.New("local mariadb: no mariadb-install-db (install mariadb-server)")
	}
	server, err := exec.LookPath("mariadbd")
	if err != nil {
		if server, err = exec.LookPath("/usr/sbin/mariadbd"); err != nil {
			return nil, errors.New("local mariadb: no mariadbd (install mariadb-server)")
		}
	}
	dir, err := makeTempDir("idemcheck-mariadb-")
	if err != nil {
		return nil, fmt.Errorf("local mariadb: %w", err)
	}
	data := filepath.Join(dir, "data")
	// --user=root lets the server run as root (it refuses otherwise); as
	// another user the option is ignored.
	init := exec.CommandContext(ctx, install, "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--user=root")
	init.Dir = dir
	init.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if out, err := init.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("local mariadb: mariadb-install-db: %v: %s", err, lastLine(string(out)))
	}
	var lastErr error
	for range 3 { // the free port may be taken before the server binds it
		port, err := freeport.Loopback()
		if err != nil {
			lastErr = err
			break
		}
		m, err := runMariaDB(ctx, server, dir, port)
		if err == nil {
			return m, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func runMariaDB(ctx context.Context, server, dir string, port int) (*localMariaDB, error) {
	logPath := filepath.Join(dir, "mariadb.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("local mariadb: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(server, "--no-defaults", "--datadir="+filepath.Join(dir, "data"),
		"--socket="+filepath.Join(dir, "sock"), "--pid-file="+filepath.Join(dir, "pid"),
		"--port="+strconv.Itoa(port), "--bind-address=127.0.0.1", "--user=root",
		"--skip-log-bin", "--innodb-flush-log-at-trx-commit=0", "--innodb-buffer-pool-size=32M")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("local mariadb: %w", err)
	}
	m := &localMariaDB{dir: dir, cmd: cmd, done: make(chan struct{}),
		dsn: fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port)}
	go func() { _ = cmd.Wait(); close(m.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-m.done:
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("local mariadb exited: %s", lastLine(string(b)))
		case <-ctx.Done():
			m.kill()
			return nil, ctx.Err()
		default:
		}
		if err := mysqlExec(ctx, m.dsn, "SELECT 1"); err == nil {
			return m, nil
		} else if time.Now().After(deadline) {
			m.kill()
			return nil, fmt.Errorf("local mariadb: not ready within 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (m *localMariaDB) kill() {
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	<-m.done
}

// stop shuts the server down (SIGTERM), kills it if it lingers, and
// removes its directory.
func (m *localMariaDB) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		m.kill()
	}
	os.RemoveAll(m.dir)
}

// mysqlExec runs one statement on a fresh connection.
func mysqlExec(ctx context.Context, dsn, stmt string) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	cfg.Timeout = 2 * time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// The shared MySQL server of this test binary, started on first use.
var (
	myOnce  sync.Once
	myDSN   string
	myStop  func()
	myErr   error
	myCount atomic.Int64
)

// RequireMySQL returns the DSN (go-sql-driver form, user@tcp(host:port)/db)
// of a fresh, empty database on the test binary's shared MySQL server,
// dropped when the test ends. It skips t when no server is available, or
// fails it under IDEMCHECK_REQUIRE_STORES=1.
func RequireMySQL(t testing.TB) string {
	t.Helper()
	myOnce.Do(func() {
		var how string
		myDSN, myStop, how, myErr = MySQL(context.Background())
		if myErr == nil {
			fmt.Fprintf(os.Stderr, "testenv: mysql via %s\n", how)
		}
	})
	if myErr != nil {
		unavailable(t, "mysql", myErr)
	}
	db := fmt.Sprintf("t_%d_%d", os.Getpid(), myCount.Add(1))
	if err := mysqlExec(context.Background(), myDSN, "CREATE DATABASE "+db); err != nil {
		t.Fatalf("testenv: create database: %v", err)
	}
	t.Cleanup(func() {
		if err := mysqlExec(context.Background(), myDSN, "DROP DATABASE "+db); err != nil {
			t.Errorf("testenv: drop database: %v", err)
		}
	})
	return myDSN + db
}

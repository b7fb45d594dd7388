package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/freeport"
	"github.com/jackc/pgx/v5"
)

// Postgres provides a PostgreSQL server: IDEMCHECK_PG_DSN, else Docker, else
// the local binaries run as the postgres user in a temp dir. how names the
// way it was provided; stop ends it (a no-op for env). When none works, err
// wraps ErrUnavailable and lists every reason.
func Postgres(ctx context.Context) (dsn string, stop func(), how string, err error) {
	if dsn := os.Getenv("IDEMCHECK_PG_DSN"); dsn != "" {
		return dsn, func() {}, HowEnv, nil
	}
	var reasons []string
	if derr := dockerAvailable(); derr == nil {
		dsn, stop, err := dockerPostgres(ctx)
		if err == nil {
			return dsn, stop, HowDocker, nil
		}
		reasons = append(reasons, err.Error())
	} else {
		reasons = append(reasons, derr.Error())
	}
	pg, err := startLocalPostgres(ctx)
	if err == nil {
		return pg.dsn, pg.stop, HowLocal, nil
	}
	reasons = append(reasons, err.Error())
	return "", nil, "", fmt.Errorf("%w: postgres: %s", ErrUnavailable, joinReasons(reasons))
}

// pgBinDir finds the PostgreSQL server binaries: $IDEMCHECK_PG_BIN, initdb
// on PATH (through its symlink), pg_config --bindir, then Debian's
// versioned /usr/lib/postgresql/N/bin (where apt puts them, off PATH).
func pgBinDir() (string, error) {
	if d := os.Getenv("IDEMCHECK_PG_BIN"); d != "" {
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) > 0 {
		sort.Strings(m) // the newest major version last
		return filepath.Dir(m[len(m)-1]), nil
	}
	return "", errors.New("local postgres: no initdb (set IDEMCHECK_PG_BIN or install postgresql)")
}

// pgCredential drops root to the postgres user (or nobody): PostgreSQL
// refuses to run as root. Nil when we are not root.
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("local postgres: running as root and no postgres or nobody user")
}

type localPostgres struct {
	dir  string
	dsn  string
	cmd  *exec.Cmd
	done chan struct{}
	// How it was started, so RestartablePostgres can start it again.
	bin  string
	cred *syscall.Credential
	port int
}

func startLocalPostgres(ctx context.Context) (*localPostgres, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	// Not t.TempDir(): its parent is 0700 root, unreadable to postgres.
	dir, err := makeTempDir("idemcheck-pg-")
	if err != nil {
		return nil, fmt.Errorf("local postgres: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("local postgres: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C", "--no-instructions")
	initdb.Dir = dir
	initdb.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	initdb.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		if msg := lastLine(string(out)); msg != "" {
			err = fmt.Errorf("%v: %s", err, msg)
		}
		return nil, fmt.Errorf("local postgres: initdb: %w", err)
	}
	// The port is picked then released, so another process may take it
	// first; postgres then exits and we retry on a new port.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		pg, err := runPostgres(ctx, bin, dir, cred)
		if err == nil {
			return pg, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func runPostgres(ctx context.Context, bin, dir string, cred *syscall.Credential) (*localPostgres, error) {
	port, err := freeport.Loopback()
	if err != nil {
		return nil, fmt.Errorf("local postgres: %w", err)
	}
	return runPostgresOn(ctx, bin, dir, cred, port)
}

func runPostgresOn(ctx context.Context, bin, dir string, cred *syscall.Credential, port int) (*localPostgres, error) {
	logPath := filepath.Join(dir, "postgres.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("local postgres: %w", err)
	}
	defer logf.Close()
	data := filepath.Join(dir, "data")
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=300")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("local postgres: %w", err)
	}
	pg := &localPostgres{dir: dir, cmd: cmd, done: make(chan struct{}), bin: bin, cred: cred, port: port,
		dsn: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)}
	go func() { _ = cmd.Wait(); close(pg.done) }()
	if err := pg.waitReady(ctx, data, logPath); err != nil {
		pg.kill()
		return nil, err
	}
	return pg, nil
}

// waitReady connects with a per-attempt timeout until the server answers
// and proves it is ours (its data_directory), or exits, or time runs out.
func (pg *localPostgres) waitReady(ctx context.Context, data, logPath string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-pg.done:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("local postgres exited: %s", lastLine(string(b)))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(actx, pg.dsn)
		if err == nil {
			var got string
			err = conn.QueryRow(actx, "SHOW data_directory").Scan(&got)
			conn.Close(actx)
			cancel()
			if err == nil && filepath.Clean(got) != filepath.Clean(data) {
				return fmt.Errorf("local postgres: port taken by a foreign server (data_directory %s)", got)
			}
			if err == nil {
				return nil
			}
		} else {
			cancel()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("local postgres: not ready after 30s")
}

func (pg *localPostgres) kill() {
	_ = syscall.Kill(-pg.cmd.Process.Pid, syscall.SIGKILL)
	<-pg.done
}

// stop shuts the server down fast (SIGINT), kills it if it lingers, and
// removes its directory.
func (pg *localPostgres) stop() {
	_ = pg.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-pg.done:
	case <-time.After(10 * time.Second):
		pg.kill()
	}
	os.RemoveAll(pg.dir)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// The shared server of this test binary, started on first use.
var (
	pgOnce  sync.Once
	pgDSN   string
	pgStop  func()
	pgHow   string
	pgErr   error
	pgCount atomic.Int64
)

// RequirePostgres returns the DSN of a fresh, empty schema on the test
// binary's shared PostgreSQL server (its search_path points there), dropped
// when the test ends. It skips t when no server is available, or fails it
// under IDEMCHECK_REQUIRE_STORES=1.
func RequirePostgres(t testing.TB) string {
	t.Helper()
	pgOnce.Do(func() {
		pgDSN, pgStop, pgHow, pgErr = Postgres(context.Background())
		if pgErr == nil {
			fmt.Fprintf(os.Stderr, "testenv: postgres via %s\n", pgHow)
		}
	})
	if pgErr != nil {
		unavailable(t, "postgres", pgErr)
	}
	schema := fmt.Sprintf("t_%d_%d", os.Getpid(), pgCount.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pgExec(ctx, pgDSN, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("testenv: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := pgExec(ctx, pgDSN, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("testenv: drop schema: %v", err)
		}
	})
	dsn, err := withSearchPath(pgDSN, schema)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return dsn
}

// PostgresHow says how the shared server was provided ("" before first use).
func PostgresHow() string { return pgHow }

func pgExec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// withSearchPath sets the search_path runtime parameter in a URL DSN.
func withSearchPath(dsn, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("IDEMCHECK_PG_DSN must be a postgres:// URL, got %q", dsn)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

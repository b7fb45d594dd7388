package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/freeport"
	"go.uber.org/goleak"
)

// ErrUnavailable says no server of the wanted kind could be provided.
var ErrUnavailable = errors.New("testenv: server unavailable")

// How a server was provided.
const (
	HowEnv    = "env"
	HowDocker = "docker"
	HowLocal  = "local-binaries"
)

// startTimeout bounds one attempt to bring a server up (Docker pulls
// included); every network step inside has its own shorter timeout.
const startTimeout = 3 * time.Minute

// Main runs the package's tests, then runs the package's own cleanups,
// stops the shared servers started for them and fails the binary when a
// goroutine is still running (goleak.VerifyTestMain, composed: the shared
// servers' goroutines must end first). Call it from TestMain.
func Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	stopShared()
	removeBinary()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// required reports whether a missing server must fail the test (CI).
func required() bool { return os.Getenv("IDEMCHECK_REQUIRE_STORES") == "1" }

// unavailable skips t, or fails it when stores are required.
func unavailable(t testing.TB, kind string, err error) {
	t.Helper()
	if required() {
		t.Fatalf("%s required (IDEMCHECK_REQUIRE_STORES=1) but unavailable: %v", kind, err)
	}
	t.Skipf("%s unavailable, skipping: %v", kind, err)
}

// ownerFile names the file holding the pid of the process that owns a temp
// dir, so a later run can sweep dirs left behind by a killed test binary.
const ownerFile = "idemcheck-owner.pid"

// makeTempDir creates a temp dir named prefix* and stamps it with our pid.
func makeTempDir(prefix string) (string, error) {
	sweepStale(prefix)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// sweepStale removes temp dirs of ours whose owning process is gone (a test
// binary killed before its cleanup ran), or that are a day old.
func sweepStale(prefix string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, d := range dirs {
		info, err := os.Stat(d)
		if err != nil || !info.IsDir() {
			continue
		}
		if time.Since(info.ModTime()) > 24*time.Hour {
			os.RemoveAll(d)
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			// Being created right now by another process, or not ours.
			if time.Since(info.ModTime()) > time.Hour {
				os.RemoveAll(d)
			}
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || !processAlive(pid) {
			os.RemoveAll(d)
		}
	}
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// joinReasons renders why each way of getting a server failed.
func joinReasons(reasons []string) string { return strings.Join(reasons, "; ") }

// FreeAddr is a loopback address (127.0.0.1:port) free a moment ago, for a
// server whose address another must know before it starts (the double the
// API under test is pointed at).
func FreeAddr(t testing.TB) string {
	t.Helper()
	port, err := freeport.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

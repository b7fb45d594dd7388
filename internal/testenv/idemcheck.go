package testenv

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binDir    string // removed by Main
	binPath   string
	buildErr  error
)

// BuildIdemcheck builds the idemcheck CLI once per test binary and returns
// its path: CLI and crash tests need a real process (exit codes, signals,
// SIGKILL). Main removes it.
func BuildIdemcheck(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := makeTempDir("idemcheck-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		binPath = filepath.Join(dir, "idemcheck")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/idemcheck/idemcheck/cmd/idemcheck").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func removeBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// Serve is one `idemcheck serve` child process.
type Serve struct {
	// URL is the base URL from the process's listening line.
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartServe runs `bin serve --addr 127.0.0.1:0 args...` and waits (up to
// 30s) for its listening line. The process is killed when t ends, and dies
// with the test binary.
func StartServe(t testing.TB, bin string, args ...string) *Serve {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Serve{cmd: cmd, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, addr, ok := strings.Cut(sc.Text(), "listening on "); ok {
				lines <- addr
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(s.Kill)
	select {
	case s.URL = <-lines:
		return s
	case <-s.done:
		t.Fatalf("idemcheck serve exited at start: %s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("idemcheck serve did not listen within 30s: %s", stderr.String())
	}
	return nil
}

// Kill ends the process abruptly, like a crash, and waits for it.
func (s *Serve) Kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

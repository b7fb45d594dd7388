package managed

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// A process that starts but never answers HTTP is an unreachable target,
// reported within the readiness bound and then stopped.
func TestManagedNeverReady(t *testing.T) {
	defer func(d time.Duration) { managedReadyTimeout = d }(managedReadyTimeout)
	managedReadyTimeout = 300 * time.Millisecond
	tg, err := apispec.FromCommand("sleep 30", 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, m, err := Start(context.Background(), tg, "")
	if m != nil || !errors.Is(err, apispec.ErrUnreachable) || !strings.Contains(err.Error(), "did not answer HTTP") {
		t.Fatalf("StartManaged(sleep) = %v, %v; want apispec.ErrUnreachable naming the wait", m, err)
	}
	if d := time.Since(start); d > managedReadyTimeout+managedStopGrace+2*time.Second {
		t.Fatalf("gave up after %s", d)
	}
}

// A process that exits before answering is reported with its exit status
// and last output line.
func TestManagedExitsEarly(t *testing.T) {
	tg, err := apispec.FromCommand(`sh -c "echo listening on nothing >&2; exit 3"`, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Start(context.Background(), tg, "")
	if !errors.Is(err, apispec.ErrUnreachable) || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "last output: listening on nothing") {
		t.Fatalf("StartManaged(exit 3) = %v; want the exit status and last output", err)
	}
}

func TestTailBufferKeepsTheTail(t *testing.T) {
	b := &tailBuffer{max: 8}
	for _, s := range []string{"abc", "defgh", "ijkl"} {
		_, _ = b.Write([]byte(s))
	}
	if got := b.String(); got != "efghijkl" {
		t.Fatalf("tail = %q, want %q", got, "efghijkl")
	}
}

// A command naming {port} listens on the picked port: a fixed base_url
// (a config written for a server started apart) is aimed at it; a
// command without {port} keeps the base_url it listens on.
func TestBaseTemplate(t *testing.T) {
	for _, c := range []struct{ cmd, base, want string }{
		{"serve --addr 127.0.0.1:{port}", "", "http://127.0.0.1:{port}"},
		{"serve --addr 127.0.0.1:{port}", "http://127.0.0.1:8080/api?v=1", "http://127.0.0.1:{port}/api?v=1"},
		{"serve --addr 127.0.0.1:{port}", "grpc://localhost:50051", "grpc://localhost:{port}"},
		{"serve --addr 127.0.0.1:{port}", "http://127.0.0.1:{port}/v1", "http://127.0.0.1:{port}/v1"},
		{"serve --addr 127.0.0.1:8080", "http://127.0.0.1:8080", "http://127.0.0.1:8080"},
	} {
		if got := baseTemplate(&apispec.Target{Command: c.cmd, BaseURL: c.base}); got != c.want {
			t.Errorf("command %q, base_url %q: %q, want %q", c.cmd, c.base, got, c.want)
		}
	}
}

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

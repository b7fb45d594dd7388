package idemchecktest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// innerEnv names the scenario TestInner runs when runInner starts this
// test binary again; unset, TestInner skips. A scenario whose test must
// fail (a broken handler) runs there, so that this package's own tests
// can assert how it fails.
const innerEnv = "IDEMCHECKTEST_INNER"

// inner are the scenarios, by name.
var inner = map[string]func(t *testing.T){}

func TestInner(t *testing.T) {
	name := os.Getenv(innerEnv)
	if name == "" {
		t.Skip("runs only inside runInner")
	}
	f := inner[name]
	if f == nil {
		t.Fatalf("no inner scenario %q", name)
	}
	f(t)
}

// runInner runs the scenario name in a fresh process of this test binary
// (-v, bounded by limit) and returns its output and whether it failed.
func runInner(t *testing.T, name string, limit time.Duration) (out string, failed bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestInner$", "-test.v", "-test.count=1", "-test.timeout="+limit.String())
	cmd.Env = append(os.Environ(), innerEnv+"="+name)
	cmd.WaitDelay = 5 * time.Second
	b, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("inner %s: not done within %s:\n%s", name, limit, b)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("inner %s: %v", name, err)
	}
	return string(b), err != nil
}

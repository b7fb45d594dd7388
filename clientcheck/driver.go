package clientcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Env is what a case run tells the client: the driving contract's
// variables (docs/clients.md).
type Env struct {
	BaseURL  string
	Calls    int
	Parallel int
	Token    string
	Case     string
}

// Vars is env as the contract's environment variables.
func (e Env) Vars() []string {
	return []string{
		"IDEMCHECK_BASE_URL=" + e.BaseURL,
		"IDEMCHECK_CALLS=" + strconv.Itoa(max(e.Calls, 1)),
		"IDEMCHECK_PARALLEL=" + strconv.Itoa(max(e.Parallel, 1)),
		"IDEMCHECK_TOKEN=" + e.Token,
		"IDEMCHECK_CASE=" + e.Case,
	}
}

// Exit is how a client's run ended.
type Exit struct {
	// IDs are the created ids it reported, one per successful call.
	IDs []string
	// Code is its exit status: 0 when every call succeeded.
	Code int
	// Stderr is the end of what it wrote to stderr (or its errors).
	Stderr string
	// Killed: it was stopped (the run's bound, or too many attempts).
	Killed bool
}

// A Driver makes a client run the calls env asks for. Its error means
// the client could not be started at all (a setup error, never a
// verdict).
type Driver interface {
	Drive(ctx context.Context, env Env) (Exit, error)
}

// stderrTail bounds how much of a command's stderr is kept; maxStdout
// how much of its stdout is read for ids.
const (
	stderrTail = 2 << 10
	maxStdout  = 1 << 20
)

// Command drives a process per case run: Args[0] with the rest as its
// arguments, idemcheck's environment plus Env's variables.
type Command struct {
	Args []string
}

// Drive runs the command once and waits for it; ctx's end kills it (and
// its process group where the platform has one), and so does its exit
// what it left running in its group: nothing of one run outlives it.
func (c Command) Drive(ctx context.Context, env Env) (Exit, error) {
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	cmd.Env = append(os.Environ(), env.Vars()...)
	// Files, not pipes: the wait ends when the command exits, even if
	// what it left running still holds its output.
	var files [2]*os.File
	for i := range files {
		f, err := os.CreateTemp("", "idemcheck-client-*")
		if err != nil {
			return Exit{}, err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		files[i] = f
	}
	cmd.Stdout, cmd.Stderr = files[0], files[1]
	detach(cmd)
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return Exit{}, err
	}
	err := cmd.Wait()
	_ = killGroup(cmd) // nothing may be left, or be gone by now: either is fine
	// tail keeps stderrTail bytes and marks the cut: read a little more.
	stdout, stderr := readBack(files[0], 0, maxStdout), readBack(files[1], 2*stderrTail, 2*stderrTail)
	x := Exit{IDs: lines(stdout), Code: cmd.ProcessState.ExitCode(), Stderr: tail(stderr)}
	var ee *exec.ExitError
	if ctx.Err() != nil {
		x.Killed = true
	} else if err != nil && !errors.As(err, &ee) {
		return x, err
	}
	return x, nil
}

// readBack reads what the command wrote to f: its last tail bytes when
// tail > 0, else its first limit bytes; an unreadable file reads as
// nothing.
func readBack(f *os.File, tail, limit int64) string {
	at := int64(0)
	if st, err := f.Stat(); err == nil && tail > 0 && st.Size() > tail {
		at = st.Size() - tail
	}
	if _, err := f.Seek(at, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, limit))
	return string(b)
}

// Func drives a Go function per logical call: the go test face's driver.
// Parallel calls run at once; the exit code is 1 when any call failed.
type Func func(ctx context.Context, baseURL string) (string, error)

// Drive makes env's calls through f.
func (f Func) Drive(ctx context.Context, env Env) (Exit, error) {
	n, at := max(env.Calls, 1), max(env.Parallel, 1)
	var mu sync.Mutex
	var x Exit
	var errs []string
	one := func() {
		id, err := f(ctx, env.BaseURL)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			x.Code = 1
			errs = append(errs, err.Error())
			return
		}
		x.IDs = append(x.IDs, id)
	}
	var wg sync.WaitGroup
	for range at {
		wg.Go(func() {
			for range n {
				one()
			}
		})
	}
	wg.Wait()
	x.Stderr = tail(strings.Join(errs, "\n"))
	x.Killed = ctx.Err() != nil
	return x, nil
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > stderrTail {
		s = "…" + s[len(s)-stderrTail:]
	}
	return s
}

// lastLine is s's last line, for one-line errors.
func lastLine(s string) string {
	l := lines(s)
	if len(l) == 0 {
		return ""
	}
	return l[len(l)-1]
}

// SetupError is a run that could not be judged: the command cannot
// start, never calls the stand-in or hangs. Code is the CLI's exit code
// (2 usage, 4 unreachable).
type SetupError struct {
	Code int
	Msg  string
}

func (e *SetupError) Error() string { return e.Msg }

func setupErrorf(code int, format string, args ...any) error {
	return &SetupError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

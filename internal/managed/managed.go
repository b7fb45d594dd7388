package managed

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/freeport"
)

// Managed-target bounds.
const (
	// managedOutputMax bounds the captured stdout+stderr (the tail is kept).
	managedOutputMax = 64 << 10
	managedStopGrace = 5 * time.Second
	managedKillWait  = 10 * time.Second
	managedPoll      = 50 * time.Millisecond
)

// managedReadyTimeout bounds waiting for a started target to answer HTTP.
// A variable so that tests can shorten it.
var managedReadyTimeout = 15 * time.Second

// Process is a target process the harness started: its own process group,
// killed with the harness (Pdeathsig), output kept for evidence.
type Process struct {
	argv    []string
	baseURL string
	tls     *tls.Config // a grpcs:// target's, for the readiness probe
	out     *tailBuffer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current process has been waited for
}

// Start starts t's command on a free loopback port and waits until
// it answers HTTP. It returns a copy of t aimed at the started process.
// An error wrapping apispec.ErrUnreachable means the process started but never
// answered; any other error means it could not be started.
func Start(ctx context.Context, t *apispec.Target, downstreamURL string) (*apispec.Target, *Process, error) {
	argv, err := apispec.SplitCommand(t.Command)
	if err != nil {
		return nil, nil, fmt.Errorf("target_cmd %q: %v", t.Command, err)
	}
	port, err := freeport.Loopback()
	if err != nil {
		return nil, nil, fmt.Errorf("target_cmd: no free port: %v", err)
	}
	p := strconv.Itoa(port)
	for i := range argv {
		argv[i] = strings.ReplaceAll(argv[i], apispec.PortPlaceholder, p)
		if downstreamURL != "" { // the API's provider URL
			argv[i] = strings.ReplaceAll(argv[i], apispec.DownstreamPlaceholder, downstreamURL)
		}
	}
	m := &Process{argv: argv, baseURL: strings.ReplaceAll(baseTemplate(t), apispec.PortPlaceholder, p), tls: t.TLSConfig(), out: &tailBuffer{max: managedOutputMax}}
	if err := m.start(); err != nil {
		return nil, nil, fmt.Errorf("target_cmd %q: %v", t.Command, err)
	}
	if err := m.waitReady(ctx); err != nil {
		m.Stop()
		return nil, nil, err
	}
	mt := *t
	mt.BaseURL = m.baseURL
	return &mt, m, nil
}

// baseTemplate is where the started command listens, {port} to be
// replaced: base_url, http://127.0.0.1:{port} without one. A fixed
// base_url (a config written for a server started apart, given
// --target-cmd) is aimed at the picked port when the command listens on
// it: a command naming {port} listens nowhere else.
func baseTemplate(t *apispec.Target) string {
	base := t.BaseURL
	switch {
	case base == "":
		return "http://127.0.0.1:" + apispec.PortPlaceholder
	case strings.Contains(base, apispec.PortPlaceholder) || !strings.Contains(t.Command, apispec.PortPlaceholder):
		return base
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return base
	}
	rest := u.EscapedPath()
	if u.RawQuery != "" {
		rest += "?" + u.RawQuery
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), apispec.PortPlaceholder) + rest
}

// BaseURL is where the managed target listens.
func (m *Process) BaseURL() string { return m.baseURL }

// Output returns the tail of the target's captured stdout and stderr.
func (m *Process) Output() string { return m.out.String() }

// start runs a new process of argv in its own process group.
func (m *Process) start() error {
	cmd := exec.Command(m.argv[0], m.argv[1:]...)
	// Own group: Kill reaches whatever the command spawned. Pdeathsig: the
	// target dies with the harness even if the harness is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = m.out, m.out
	cmd.WaitDelay = time.Second // output pipes held by an escaped grandchild
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	m.mu.Lock()
	m.cmd, m.done = cmd, done
	m.mu.Unlock()
	return nil
}

// waitReady polls until the target answers any HTTP response, the process
// exits, or managedReadyTimeout passes.
func (m *Process) waitReady(ctx context.Context) error {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	probe := apispec.NewReadinessProbe(m.baseURL, m.tls)
	deadline := time.Now().Add(managedReadyTimeout)
	for {
		req, err := http.NewRequestWithContext(ctx, probe.Method, probe.URL, nil)
		if err != nil {
			return fmt.Errorf("target_cmd: base URL %q: %v", m.baseURL, err)
		}
		maps.Copy(req.Header, probe.Header)
		if resp, err := probe.Client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10)) // the trailers follow the body
			resp.Body.Close()
			if probe.Answered(resp) {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("%w: target_cmd %s exited before answering at %s (%v)%s", apispec.ErrUnreachable, m.argv[0], m.baseURL, cmd.ProcessState, m.lastLine())
		case <-ctx.Done():
			return fmt.Errorf("%w: target_cmd %s: %v", apispec.ErrUnreachable, m.argv[0], ctx.Err())
		case <-time.After(managedPoll):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: target_cmd %s started but did not answer %s at %s within %s%s", apispec.ErrUnreachable, m.argv[0], probe.Speaks, m.baseURL, managedReadyTimeout, m.lastLine())
		}
	}
}

// lastLine is the last line the target printed, for one-line errors.
func (m *Process) lastLine() string {
	out := strings.TrimSpace(m.out.String())
	if out == "" {
		return ""
	}
	return "; last output: " + out[strings.LastIndexByte(out, '\n')+1:]
}

// signal sends sig to the current process group and waits up to wait for
// the process to end.
func (m *Process) signal(sig syscall.Signal, wait time.Duration) bool {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	if cmd == nil {
		return true
	}
	select {
	case <-done: // already gone: its pid may belong to someone else now
		return true
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}

// Kill ends the target abruptly (SIGKILL to its process group), like a
// crash, and waits until it is gone.
func (m *Process) Kill() { m.signal(syscall.SIGKILL, managedKillWait) }

// Restart starts the target again on the same port and waits until it
// answers HTTP.
func (m *Process) Restart(ctx context.Context) error {
	m.Kill()
	if err := m.start(); err != nil {
		return fmt.Errorf("restart %s: %v", m.argv[0], err)
	}
	return m.waitReady(ctx)
}

// Stop ends the target at the end of a run: SIGTERM, then SIGKILL after a
// grace period.
func (m *Process) Stop() {
	if !m.signal(syscall.SIGTERM, managedStopGrace) {
		m.Kill()
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// maxManagedReplicas bounds StartReplicas.
const maxManagedReplicas = 32

// StartReplicas starts n processes of t's command (target_cmd,
// --target-cmd), each on its own free loopback port, and returns a copy of
// t aimed at them (BaseURL the first, Replicas all of them when n > 1)
// with their handles; the caller stops them. For them to be replicas of
// one API the command must name a shared store (e.g. idemcheck serve
// --store postgres --dsn ...).
func StartReplicas(ctx context.Context, t *apispec.Target, n int, downstreamURL string) (*apispec.Target, []*Process, error) {
	if t.Command == "" {
		return nil, nil, errors.New("replicas: no target command (target_cmd, --target-cmd) to start")
	}
	if n < 1 || n > maxManagedReplicas {
		return nil, nil, fmt.Errorf("replicas %d: want 1..%d", n, maxManagedReplicas)
	}
	var ms []*Process
	var bases []string
	for range n {
		_, m, err := Start(ctx, t, downstreamURL)
		if err != nil {
			for _, m := range ms {
				m.Stop()
			}
			return nil, nil, err
		}
		ms = append(ms, m)
		bases = append(bases, m.BaseURL())
	}
	out := *t
	out.BaseURL, out.Replicas = bases[0], nil
	if n > 1 {
		out.Replicas = bases
	}
	return &out, ms, nil
}

package scenarios

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// InProcess returns a copy of t whose same-key bursts call h, the handler
// served at t.BaseURL, directly: goroutines released together, each
// calling h.ServeHTTP, with no network between them. Over loopback a
// handler's check-then-act race (look the key up, execute, store) has a
// window of microseconds that requests parsed one connection after another
// seldom hit; goroutines already running when they are released enter it
// together (idemchecktest.Handler). Every other request still goes over
// HTTP, and the bursts' exchanges keep the URL a curl reproduction uses.
func (t *Target) InProcess(h http.Handler) *Target {
	c := *t
	c.inproc = h
	return &c
}

// inProcessHow says, for the evidence, how an in-process burst was sent.
const inProcessHow = "called in-process: the handler itself, from goroutines released together (no network between them)"

// inProcessBurst sends size requests under k with body by calling h from
// size goroutines. The goroutines spin until the last of them has
// started, which releases them, once it sees another processor running
// one of them (coScheduled), and enters h at once: at release two
// processors run one each, so two requests enter h within a few hundred
// nanoseconds. The request body
// and the response writer yield to the scheduler on each call, as a
// network read or write may block: a handler that reads the body or
// writes its answer between its lookup and its store lets the others in.
func (e *Env) inProcessBurst(ctx context.Context, h http.Handler, k string, size int, body []byte, label string) []Resp {
	reqs := make([]*lbReq, size)
	for i := range reqs {
		r := Req{Label: fmt.Sprintf("%s %d", label, i+1), Key: k, Body: body}
		reqs[i] = &lbReq{x: e.exchange(r), r: r}
	}
	timeout := e.client.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := e.oracle
	var (
		started atomic.Int32
		release atomic.Bool
		beat    atomic.Uint64 // moved by the waiting goroutines as they spin
		wg      sync.WaitGroup
	)
	done := make([]chan Resp, size)
	for i, q := range reqs {
		done[i] = make(chan Resp, 1)
		if c != nil && c.global {
			c.enter(ctx, e, scopeOf(q.r))
		}
		hr, err := serverRequest(ctx, q.x.Request)
		wg.Go(func() {
			if started.Add(1) == int32(size) {
				coScheduled(&beat)
				release.Store(true)
			}
			for !release.Load() {
				beat.Add(1)
				runtime.Gosched()
			}
			var resp Resp
			if err != nil {
				resp = Resp{Start: time.Now(), Err: err}
			} else {
				resp = serveInProcess(h, hr)
			}
			resp.End = time.Now()
			if c != nil && c.global {
				c.leave()
			}
			done[i] <- resp
		})
	}
	// A handler that never returns is cut off at the client's timeout,
	// as over the network; its goroutine ends when the handler does.
	waited := make(chan struct{})
	go func() {
		wg.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-ctx.Done():
	}
	work := e.workOf(e.Op, body)
	for i, q := range reqs {
		select {
		case q.resp = <-done[i]:
		default:
			q.resp = Resp{Start: time.Now(), End: time.Now(), Err: fmt.Errorf("the handler did not return within %s", timeout)}
		}
		q.resp.Work = work
	}
	return e.recordBurst(reqs, " (in-process)")
}

// handshakeWait bounds how long a release waits to see another processor
// running (coScheduled).
const handshakeWait = 5 * time.Millisecond

// coScheduled returns once beat moves, i.e. a waiting goroutine is running
// on another processor right now, or after handshakeWait. On a machine
// whose cores other processes share, this process's threads run at the
// same moment only part of the time; a release then lets two requests
// into the handler within nanoseconds, not one now and one when the other
// thread is next scheduled.
func coScheduled(beat *atomic.Uint64) {
	if runtime.GOMAXPROCS(0) < 2 {
		return // nothing else runs while this goroutine spins
	}
	b0 := beat.Load()
	for deadline := time.Now().Add(handshakeWait); beat.Load() == b0 && time.Now().Before(deadline); {
	}
}

// serverRequest is the request a server would hand a handler for x.
func serverRequest(ctx context.Context, x ExchangeRequest) (*http.Request, error) {
	u, err := url.Parse(x.URL)
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, x.Method, x.URL, yieldingReader{bytes.NewReader(x.Body)})
	if err != nil {
		return nil, err
	}
	r.Header = x.Header.Clone()
	r.ContentLength = int64(len(x.Body))
	r.RequestURI = u.RequestURI()
	r.RemoteAddr = "127.0.0.1:1"
	return r, nil
}

// serveInProcess calls h with r and returns what it wrote; a panic is a
// transport error, as the connection a server drops for one.
func serveInProcess(h http.Handler, r *http.Request) (resp Resp) {
	rec := yieldingRecorder{httptest.NewRecorder()}
	resp.Start = time.Now()
	resp.Sent = resp.Start
	defer func() {
		if p := recover(); p != nil {
			if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				resp.Err = errors.New("the handler aborted the response (http.ErrAbortHandler)")
				return
			}
			resp.Err = fmt.Errorf("the handler panicked: %v", p)
		}
	}()
	h.ServeHTTP(rec, r)
	res := rec.Result()
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxBody)) // an in-memory body
	resp.Status, resp.Header, resp.Body = res.StatusCode, res.Header, b
	return resp
}

// yieldingReader yields before each read, as a body arriving over the
// network may make the handler wait.
type yieldingReader struct{ r io.Reader }

func (y yieldingReader) Read(p []byte) (int, error) {
	runtime.Gosched()
	return y.r.Read(p)
}

// yieldingRecorder yields before each write of the answer, as a network
// write may block.
type yieldingRecorder struct{ *httptest.ResponseRecorder }

func (y yieldingRecorder) WriteHeader(code int) {
	runtime.Gosched()
	y.ResponseRecorder.WriteHeader(code)
}

func (y yieldingRecorder) Write(b []byte) (int, error) {
	runtime.Gosched()
	return y.ResponseRecorder.Write(b)
}

// inProcessRoundFactor multiplies a burst case's rounds when they are
// called in-process: a round takes milliseconds, and on a machine whose
// other work keeps a processor from running a released goroutine at once,
// a narrow window is entered by two requests in only some rounds.
const inProcessRoundFactor = 16

// inProcessRounds is the factor on a burst case's rounds: its requests to
// bases (replicas) go over the network.
func (e *Env) inProcessRounds(bases []string) int {
	if e.Target.inproc != nil && len(bases) == 0 {
		return inProcessRoundFactor
	}
	return 1
}

// runsAlone reports an instance that runs after the others, alone: the
// same-key burst called in-process, whose released goroutines enter the
// handler together only when no other case keeps the processors busy.
func runsAlone(t *Target, in instance) bool {
	return t.inproc != nil && in.ID == "concurrent/same-key-burst"
}

// exchangeMark is how many exchanges the case has recorded so far.
func (e *Env) exchangeMark() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.exchanges)
}

// keepReportedRound keeps, of the many rounds of an in-process burst,
// the exchanges of the round the verdict reports: a round recorded from
// mark that is now the one reported replaces the earlier ones; another
// is dropped. Thousands of replays would otherwise bury the round that
// shows the double execution. Network bursts keep every round.
func (e *Env) keepReportedRound(bases []string, mark int, reported bool) {
	if e.inProcessRounds(bases) == 1 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if reported {
		e.exchanges = append([]Exchange(nil), e.exchanges[mark:]...)
	} else {
		e.exchanges = e.exchanges[:mark]
	}
}

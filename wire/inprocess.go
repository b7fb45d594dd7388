package wire

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

// InProcess sends a burst of requests by calling Handler, the handler a
// server would run for them, from one goroutine each: no network between
// them. It is how the go-test face reaches a handler's check-then-act race
// (look the key up, execute, store), whose window of microseconds requests
// parsed one connection after another seldom hit.
type InProcess struct {
	Handler http.Handler
	// Timeout cuts off a handler that does not return (zero: a minute), as
	// a client's timeout does over the network.
	Timeout time.Duration
	// Around, when set, is called before request i is handed to Handler;
	// the function it returns once its answer is in.
	Around func(i int) (done func())
}

// Burst sends xs by calling Handler from len(xs) goroutines and returns
// the answers and the exchanges as sent, labelled "(in-process)". The goroutines spin until the last of them has
// started, which releases them, once it sees another processor running
// one of them (coScheduled), and enters h at once: at release two
// processors run one each, so two requests enter h within a few hundred
// nanoseconds. The request body
// and the response writer yield to the scheduler on each call, as a
// network read or write may block: a handler that reads the body or
// writes its answer between its lookup and its store lets the others in.
func (ip InProcess) Burst(ctx context.Context, xs []Exchange) ([]Resp, []Exchange) {
	size := len(xs)
	reqs := make([]*lbReq, size)
	for i, x := range xs {
		reqs[i] = &lbReq{i: i, x: x}
	}
	timeout := ip.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		started atomic.Int32
		release atomic.Bool
		beat    atomic.Uint64 // moved by the waiting goroutines as they spin
		wg      sync.WaitGroup
	)
	done := make([]chan Resp, size)
	for i, q := range reqs {
		done[i] = make(chan Resp, 1)
		q.done = LastByte{Around: ip.Around}.around(q.i)
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
				resp = serveInProcess(ip.Handler, hr)
			}
			resp.End = time.Now()
			q.done()
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
	for i, q := range reqs {
		select {
		case q.resp = <-done[i]:
		default:
			q.resp = Resp{Start: time.Now(), End: time.Now(), Err: fmt.Errorf("the handler did not return within %s", timeout)}
		}
	}
	return finished(reqs, " (in-process)")
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
	b, _ := io.ReadAll(io.LimitReader(res.Body, MaxBody)) // an in-memory body
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

package chaos

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

// The proxy's own HTTP/1.1 server loop (used by Server): one goroutine
// per client connection reads a request, runs the attempt and writes the
// answer, with no per-request goroutine, background read or response
// buffering of net/http's server. Faults see the same Relay, through
// rawResponse, an http.ResponseWriter that also hijacks and flushes.

// Limits of the loop (net/http's server defaults, where it has one).
const (
	idleTimeout    = 90 * time.Second // between requests on a keep-alive connection
	headerTimeout  = 10 * time.Second // from the first byte to the end of the headers
	maxHeaderBytes = 1<<20 + 4096
)

// clientConn is one accepted connection.
type clientConn struct {
	s      *Server
	conn   net.Conn
	cr     connReader
	br     *bufio.Reader
	bw     *bufio.Writer
	remote string
	pumps  bool // the proxy may pump requests (pump.go)
	dl     deadlines
	active bool // guarded by s.mu: an attempt is in progress
}

// connReader feeds the bufio.Reader: it caps the header bytes of a
// request and hands back the byte a client watch may have read.
type connReader struct {
	conn    net.Conn
	limit   int64
	pending []byte // at most one byte read by watchClient
}

func (r *connReader) Read(b []byte) (int, error) {
	if r.limit <= 0 {
		return 0, errHeaderTooLarge
	}
	if len(b) == 0 {
		return 0, nil
	}
	if len(r.pending) > 0 {
		b[0] = r.pending[0]
		r.pending = r.pending[:0]
		r.limit--
		return 1, nil
	}
	if int64(len(b)) > r.limit {
		b = b[:r.limit]
	}
	n, err := r.conn.Read(b)
	r.limit -= int64(n)
	return n, err
}

var errHeaderTooLarge = errors.New("request header too large")

var bufioPool = sync.Pool{New: func() any {
	return &[2]any{bufio.NewReaderSize(nil, 16<<10), bufio.NewWriterSize(nil, 16<<10)}
}}

// serve runs the connection until the client closes it, an answer
// requires closing it, a fault takes it over, or the server shuts down.
func (c *clientConn) serve() {
	bufs := bufioPool.Get().(*[2]any)
	c.br, c.bw = bufs[0].(*bufio.Reader), bufs[1].(*bufio.Writer)
	c.cr.conn = c.conn
	c.br.Reset(&c.cr)
	c.bw.Reset(c.conn)
	hijacked := false
	defer func() {
		if !hijacked {
			_ = c.conn.Close()
		}
		c.br.Reset(nil)
		c.bw.Reset(nil)
		bufioPool.Put(bufs)
		c.s.forget(c)
	}()
	for {
		c.cr.limit = math.MaxInt64
		c.dl.armRead(c.conn, idleTimeout)
		if _, err := c.br.Peek(1); err != nil {
			return
		}
		if !c.s.begin(c) {
			return
		}
		// Usually the whole head came with the first read; only a head
		// still arriving needs its own deadline.
		if !headComplete(c.br) {
			c.dl.setRead(c.conn, time.Now().Add(headerTimeout))
		} else if c.pumps {
			if handled, keep := c.pump(); handled {
				if !keep || !c.s.end(c) {
					return
				}
				continue
			}
		}
		c.cr.limit = maxHeaderBytes
		req, err := http.ReadRequest(c.br)
		if err != nil {
			c.badRequest(err)
			return
		}
		c.cr.limit = math.MaxInt64
		c.dl.arm(c.conn, c.s.p.opts.timeout)
		req.RemoteAddr = c.remote
		keep, hj := c.attempt(req)
		if hj {
			hijacked = true
			return
		}
		if !keep || !c.s.end(c) {
			return
		}
	}
}

// headComplete reports whether br holds a whole request head.
func headComplete(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return bytes.Contains(b, []byte("\r\n\r\n"))
}

// attempt handles one request; keep says the connection can carry
// another, hijacked that a fault took it over.
func (c *clientConn) attempt(req *http.Request) (keep, hijacked bool) {
	if req.ProtoMajor != 1 {
		c.plainError(http.StatusHTTPVersionNotSupported, "the proxy speaks HTTP/1.x")
		return false, false
	}
	if req.Header.Get("Expect") == "100-continue" && req.ContentLength != 0 {
		_, _ = c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if c.bw.Flush() != nil {
			return false, false
		}
	}
	body := &sawEOF{r: req.Body}
	req.Body = body
	w := &rawResponse{c: c, req: req, close: req.Close}
	if !c.run(w, req) {
		return false, w.hijacked
	}
	if w.hijacked {
		return false, true
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	// A body the attempt did not read to its end leaves the connection
	// mid-request: it cannot carry another one.
	return c.bw.Flush() == nil && body.eof && !w.close, false
}

// run is the attempt; false when it panicked (http.ErrAbortHandler, or
// a bug: logged with its stack), and the connection is then closed, as
// net/http's server does.
func (c *clientConn) run(w *rawResponse, req *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				log.Printf("chaos proxy: panic serving %s: %v\n%s", c.remote, v, debug.Stack())
			}
			ok = false
		}
	}()
	c.s.p.handle(w, req)
	return true
}

// sawEOF notes whether a request body was read to its end.
type sawEOF struct {
	r   io.ReadCloser
	eof bool
}

func (b *sawEOF) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *sawEOF) Close() error { return b.r.Close() }

// badRequest answers a request the loop could not parse, then the
// connection is closed.
func (c *clientConn) badRequest(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return // the client went away
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return
	}
	if errors.Is(err, errHeaderTooLarge) {
		c.plainError(http.StatusRequestHeaderFieldsTooLarge, "request header too large")
		return
	}
	c.plainError(http.StatusBadRequest, "malformed request: "+err.Error())
}

func (c *clientConn) plainError(status int, msg string) {
	c.dl.setWrite(c.conn, time.Now().Add(5*time.Second))
	_, _ = c.bw.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) +
		"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(msg)) + "\r\n\r\n" + msg)
	_ = c.bw.Flush()
}

// rawResponse writes an HTTP/1.1 response into the connection's buffer.
// Every answer of the proxy sets Content-Length; one that does not is
// delimited by closing the connection.
type rawResponse struct {
	c           *clientConn
	req         *http.Request
	h           http.Header
	wroteHeader bool
	hijacked    bool
	close       bool // send Connection: close and end the connection
}

func (w *rawResponse) Header() http.Header {
	if w.h == nil {
		w.h = make(http.Header, 8)
	}
	return w.h
}

func (w *rawResponse) WriteHeader(status int) {
	if w.wroteHeader || w.hijacked {
		return
	}
	w.wroteHeader = true
	h := w.Header()
	if _, ok := h["Content-Length"]; !ok && !bodyless(w.req.Method, status) {
		w.close = true
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = []string{time.Now().UTC().Format(http.TimeFormat)}
	}
	bw := w.c.bw
	var line [64]byte
	b := append(line[:0], "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\n"...)
	_, _ = bw.Write(b)
	for k, vv := range h {
		for _, v := range vv {
			_, _ = bw.WriteString(k)
			_, _ = bw.WriteString(": ")
			_, _ = bw.WriteString(v)
			_, _ = bw.WriteString("\r\n")
		}
	}
	if w.close {
		_, _ = bw.WriteString("Connection: close\r\n")
	}
	_, _ = bw.WriteString("\r\n")
}

// bodyless reports answers that carry no body whatever their headers say.
func bodyless(method string, status int) bool {
	return method == http.MethodHead || status < 200 || status == http.StatusNoContent || status == http.StatusNotModified
}

func (w *rawResponse) Write(b []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.req.Method == http.MethodHead {
		return len(b), nil
	}
	return w.c.bw.Write(b)
}

func (w *rawResponse) Flush() { _ = w.c.bw.Flush() }

// Hijack hands the connection to a fault (which closes it); what was
// written so far is sent first.
func (w *rawResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	_ = w.c.bw.Flush()
	w.hijacked = true
	return w.c.conn, bufio.NewReadWriter(w.c.br, w.c.bw), nil
}

// watchClient gives r a context that ends when the client closes the
// connection, for faults that wait (delay). It reads at most one byte
// ahead (a pipelined next request), which serve reads again afterwards.
// stop must be called before the connection is read or written again.
func (w *rawResponse) watchClient(r *http.Request) (*http.Request, func()) {
	c := w.c
	if c.br.Buffered() > 0 {
		return r, func() {} // a next request is already here: the client is alive
	}
	ctx, cancel := context.WithCancel(r.Context())
	done := make(chan struct{})
	var b [1]byte
	var n int
	go func() {
		defer close(done)
		var err error
		n, err = c.conn.Read(b[:])
		var ne net.Error
		if n == 0 && !(errors.As(err, &ne) && ne.Timeout()) {
			cancel()
		}
	}()
	return r.WithContext(ctx), func() {
		c.dl.setRead(c.conn, aLongTimeAgo)
		<-done
		cancel()
		c.dl.setRead(c.conn, time.Time{})
		if n == 1 {
			c.cr.pending = append(c.cr.pending[:0], b[0])
		}
	}
}

var aLongTimeAgo = time.Unix(1, 0)

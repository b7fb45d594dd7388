package chaos

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Relay is one client attempt as a fault sees it: the buffered request
// body and the operations a fault composes (forward, answer, abort). Each
// operation records itself in the attempt's history line.
type Relay struct {
	Body []byte
	w    http.ResponseWriter
	r    *http.Request
	p    *Proxy
	ev   Event
}

// Request is the client's request (its body is already in Body).
func (x *Relay) Request() *http.Request { return x.r }

// Forward sends body upstream once and reads the whole response. The
// upstream exchange is detached from the client's connection: a client
// that goes away does not cancel a request the upstream is committing.
func (x *Relay) Forward(body []byte) *Upstream {
	u := x.forward(body)
	x.ev.Upstream = append(x.ev.Upstream, *u)
	return u
}

// forward is Forward without recording, for faults that run copies
// concurrently and record them in order afterwards.
func (x *Relay) forward(body []byte) *Upstream {
	p := x.p
	ctx := context.WithoutCancel(x.r.Context())
	if _, own := p.opts.transport.(*connPool); own {
		ctx = deadlineCtx{ctx, time.Now().Add(p.opts.timeout)}
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.opts.timeout)
		defer cancel()
	}
	u := &Upstream{}
	if p.opts.history != nil {
		u.SentNS = max(time.Since(x.ev.Time).Nanoseconds(), 0)
	}
	resp, err := p.opts.transport.RoundTrip(p.upstreamRequest(ctx, x.r, body))
	if err == nil {
		err = p.read(u, resp, x.ev.Key)
	}
	p.count(true, err != nil)
	if err != nil {
		u.Error = err.Error()
	}
	return u
}

// read reads resp, the answer to an attempt under key, whole into u: its
// status, header and body, and for the history's reader (only) its digest
// and created id.
func (p *Proxy) read(u *Upstream, resp *http.Response, key string) error {
	u.Status, u.header = resp.StatusCode, resp.Header
	u.buf = bufPool.Get().(*bytes.Buffer)
	err := readBody(u.buf, resp, p.opts.maxBody)
	u.body = u.buf.Bytes()
	if err != nil || p.opts.history == nil {
		return err
	}
	u.SHA256 = digest(u.body)
	if u.Status >= 200 && u.Status < 300 {
		u.ID = p.opts.idOf(key, decoded(u.body, u.header, p.opts.maxBody))
	}
	return nil
}

// deadlineCtx carries a deadline without a timer: the proxy's own
// connection pool enforces it as the connection's deadline.
type deadlineCtx struct {
	context.Context
	at time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.at, true }

// bufPool holds response-body buffers: the proxy reads every response
// whole before answering, so they are reused across attempts.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// release returns the attempt's response buffers to the pool.
func (x *Relay) release() {
	for i := range x.ev.Upstream {
		if b := x.ev.Upstream[i].buf; b != nil && b.Cap() <= 1<<20 {
			b.Reset()
			bufPool.Put(b)
		}
		x.ev.Upstream[i].buf, x.ev.Upstream[i].body = nil, nil
	}
}

func readBody(buf *bytes.Buffer, resp *http.Response, limit int64) error {
	defer resp.Body.Close()
	if n := resp.ContentLength; n > 0 && n <= limit {
		buf.Grow(int(n) + 1)
	}
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, limit+1)); err != nil {
		return err
	}
	if int64(buf.Len()) > limit {
		return errUpstreamBody
	}
	return nil
}

// Respond sends the upstream's response to the client, labelled with the
// fault if one applies. An upstream that failed becomes a 502 naming why.
func (x *Relay) Respond(u *Upstream) {
	if u.Error != "" {
		x.answer(http.StatusBadGateway, "upstream", "upstream: "+u.Error)
		return
	}
	var h http.Header
	if rw, ok := x.w.(*rawResponse); ok && rw.h == nil {
		// The proxy's own loop writes the upstream's header map as is.
		for _, k := range hopHeaders {
			delete(u.header, k)
		}
		rw.h, h = u.header, u.header
	} else {
		h = x.w.Header()
		copyHeader(h, u.header)
	}
	if x.ev.Fault != "" {
		h.Set(FaultHeader, x.ev.Fault)
	}
	h.Set("Content-Length", strconv.Itoa(len(u.body)))
	x.w.WriteHeader(u.Status)
	_, _ = x.w.Write(u.body)
	x.ev.Client, x.ev.Status = ClientOK, u.Status
}

// answer sends a problem+json response the proxy made up; the client
// then knows the attempt did not reach the upstream (unless the label is
// "upstream", which reports an upstream failure).
func (x *Relay) answer(status int, label, detail string) {
	if label == "" {
		label = x.ev.Fault
	}
	h := x.w.Header()
	h.Set("Content-Type", "application/problem+json")
	if label != "" {
		h.Set(FaultHeader, label)
	}
	body, _ := json.Marshal(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
	h.Set("Content-Length", strconv.Itoa(len(body)))
	x.w.WriteHeader(status)
	_, _ = x.w.Write(body)
	x.ev.Client, x.ev.Status = ClientFail, status
	if label == "upstream" {
		x.ev.Client = ClientUnknown // the upstream may have acted before failing
	}
}

// Abort closes the client connection without an (complete) answer: "fin"
// closes it normally, "rst" resets it (SO_LINGER 0). The client cannot
// tell whether the upstream acted.
func (x *Relay) Abort(mode string) {
	x.ev.Client = ClientUnknown
	if hj, ok := x.w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok && mode == "rst" {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	// HTTP/2 or a wrapped writer: the server resets the stream.
	panic(http.ErrAbortHandler)
}

// decoded is body without its gzip content coding (a client that accepts
// gzip gets the created id compressed), read up to max bytes; body itself
// when it is not gzip-coded or does not decode.
func decoded(body []byte, h http.Header, max int64) []byte {
	if !strings.EqualFold(strings.TrimSpace(h.Get("Content-Encoding")), "gzip") {
		return body
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return body
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, max))
	if err != nil {
		return body
	}
	return out
}

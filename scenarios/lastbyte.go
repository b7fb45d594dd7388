package scenarios

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Burst synchronisation (Profile.BurstSync): how a same-key burst's
// requests are released.
const (
	// SyncLastByte writes every request but its last byte, each on its own
	// open connection (HTTP/1.1) or as streams of one connection (HTTP/2,
	// where TLS negotiates it), then releases the last bytes together: one
	// write per connection, in a tight loop (HTTP/1.1), or one write of
	// every stream's final frame (HTTP/2, the "single-packet attack").
	// Every request is then past header parsing, into the handler, when the
	// bodies complete: the spread is the last bytes', not the scheduler's.
	SyncLastByte = "last-byte"
	// SyncBarrier releases goroutines at a barrier over warmed pooled
	// connections; requests reach the server spread over the scheduler's
	// and the network's jitter.
	SyncBarrier = "barrier"
)

// lastByteSettle is how long the burst waits, once every request but its
// last byte is written, before releasing the last bytes: the server's
// time to parse every request's headers and enter its handler.
const lastByteSettle = 50 * time.Millisecond

// burster sends the same-key bursts of one case: by last-byte sync where
// it works, else released by a barrier over warmed connections (warmed
// once, on first need).
type burster struct {
	e      *Env
	size   int
	bases  []string
	client *http.Client
}

func (e *Env) newBurster(size int, bases ...string) *burster {
	return &burster{e: e, size: size, bases: bases}
}

// close closes the warmed connections, if any.
func (b *burster) close() {
	if b.client != nil {
		b.client.CloseIdleConnections()
	}
}

// send sends one burst of b.size requests under k with body; how says how
// they were released (and, after a fallback, why), for the evidence.
func (b *burster) send(ctx context.Context, k string, body []byte, label string) (rs []Resp, how string) {
	e := b.e
	if h := e.Target.inproc; h != nil && len(b.bases) == 0 {
		return e.inProcessBurst(ctx, h, k, b.size, body, label), inProcessHow
	}
	var why string
	if e.Profile.BurstSync != SyncBarrier {
		var ok bool
		if rs, how, ok, why = e.lastByteBurst(ctx, k, b.size, body, label, b.bases...); ok {
			work := e.workOf(e.Op, body)
			for i := range rs {
				rs[i].Work = work
			}
			return rs, how
		}
	}
	if b.client == nil {
		b.client = e.warmClient(ctx, b.size, b.bases...)
	}
	how = "released by a barrier"
	if why != "" {
		how += " (last-byte sync not possible: " + why + ")"
	}
	return e.burst(ctx, b.client, k, b.size, body, label, b.bases...), how
}

// lbReq is one request of a last-byte burst.
type lbReq struct {
	x    Exchange
	r    Req
	head []byte // everything but the last byte (HTTP/1.1)
	last []byte
	conn net.Conn
	resp Resp
}

// lastByteBurst sends size requests under k by last-byte synchronisation.
// ok is false, with why, when it cannot (an empty body has no last byte to
// hold back; a connection could not be opened): no request of the burst
// was sent then (at most a warming GET), and the caller falls back to the
// barrier.
func (e *Env) lastByteBurst(ctx context.Context, k string, size int, body []byte, label string, bases ...string) (rs []Resp, how string, ok bool, why string) {
	if len(body) == 0 {
		return nil, "", false, "the body is empty: no last byte to hold back"
	}
	reqs := make([]*lbReq, size)
	for i := range reqs {
		r := Req{Label: fmt.Sprintf("%s %d", label, i+1), Key: k, Body: body}
		if len(bases) > 0 {
			r.Base = bases[i%len(bases)]
			r.Label += fmt.Sprintf(" on replica %d", i%len(bases)+1)
		}
		reqs[i] = &lbReq{x: e.exchange(r), r: r}
	}
	timeout := e.client.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	deadline := time.Now().Add(timeout)
	if sessions, err := e.h2Sessions(ctx, reqs, deadline); err != nil {
		return nil, "", false, err.Error()
	} else if sessions != nil {
		rs = e.h2Burst(ctx, sessions, reqs, deadline)
		return rs, fmt.Sprintf("last-byte sync over HTTP/2: every stream's final DATA frame in one write per connection (%d connection(s))", len(sessions)), true, ""
	}
	if err := e.h1Prepare(ctx, reqs, deadline); err != nil {
		return nil, "", false, err.Error()
	}
	return e.h1Burst(ctx, reqs, deadline), "last-byte sync over HTTP/1.1: every request but its last byte written on its own connection, then the last bytes released together", true, ""
}

// dialBase opens a connection to base's host, TLS for https (offering
// protos by ALPN); proto is what was negotiated ("" for plain TCP).
func (e *Env) dialBase(ctx context.Context, base string, protos []string, deadline time.Time) (conn net.Conn, proto string, err error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, "", err
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, "", err
	}
	if u.Scheme != "https" {
		return c, "", nil
	}
	cfg := &tls.Config{}
	if t := e.Target.TLSConfig(); t != nil {
		cfg = t.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	cfg.NextProtos = protos
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(dctx); err != nil {
		c.Close()
		return nil, "", err
	}
	return tc, tc.ConnectionState().NegotiatedProtocol, nil
}

// h1Prepare serialises each request and opens its connection. On error
// every connection opened is closed: nothing was sent.
func (e *Env) h1Prepare(ctx context.Context, reqs []*lbReq, deadline time.Time) error {
	for _, q := range reqs {
		hr, err := http.NewRequest(q.x.Request.Method, q.x.Request.URL, bytes.NewReader(q.x.Request.Body))
		if err != nil {
			return err
		}
		hr.Header = q.x.Request.Header.Clone()
		var buf bytes.Buffer
		if err := hr.Write(&buf); err != nil {
			return err
		}
		wire := buf.Bytes()
		if !bytes.HasSuffix(wire, q.x.Request.Body) {
			return errors.New("the serialised request does not end with its body")
		}
		q.head, q.last = wire[:len(wire)-1], wire[len(wire)-1:]
	}
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, q := range reqs {
		wg.Go(func() {
			base := q.r.Base
			if base == "" {
				base = e.Target.BaseURL
			}
			q.conn, errs[i] = e.warmConn(ctx, base, deadline)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, q := range reqs {
			if q.conn != nil {
				q.conn.Close()
			}
		}
		return fmt.Errorf("opening its connections: %v", err)
	}
	return nil
}

// warmConn opens an HTTP/1.1 connection to base and warms it with one
// GET of base's root (any answer), as the barrier's pooled connections
// are: the server has accepted it and set it up before the burst. A
// server that closes the connection after that answer gets a fresh one.
func (e *Env) warmConn(ctx context.Context, base string, deadline time.Time) (net.Conn, error) {
	conn, _, err := e.dialBase(ctx, base, []string{"http/1.1"}, deadline)
	if err != nil {
		return nil, err
	}
	warm, err := http.NewRequest(http.MethodGet, base+"/", nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetDeadline(deadline)
	if err := warm.Write(conn); err == nil {
		if resp, err := http.ReadResponse(bufio.NewReader(conn), warm); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
			resp.Body.Close()
			if !resp.Close {
				return conn, nil
			}
		}
	}
	conn.Close()
	conn, _, err = e.dialBase(ctx, base, []string{"http/1.1"}, deadline)
	return conn, err
}

// h1Burst writes each request's head on its connection, lets the server
// take them in, writes every last byte in one loop and reads the answers.
func (e *Env) h1Burst(ctx context.Context, reqs []*lbReq, deadline time.Time) []Resp {
	stop := context.AfterFunc(ctx, func() {
		for _, q := range reqs {
			q.conn.Close()
		}
	})
	defer stop()
	c := e.oracle
	var wg sync.WaitGroup
	for _, q := range reqs {
		_ = q.conn.SetDeadline(deadline)
		if c != nil && c.global {
			c.enter(ctx, e, scopeOf(q.r))
		}
		q.x.Start = time.Now()
		q.resp.Start = q.x.Start
		if _, err := q.conn.Write(q.head); err != nil {
			q.resp.Err = err
			q.last = nil
		}
		wg.Go(func() {
			defer q.conn.Close()
			if q.resp.Err == nil {
				br := bufio.NewReader(q.conn)
				hr, err := http.ReadResponse(br, nil)
				if err == nil {
					var b []byte
					b, err = io.ReadAll(io.LimitReader(hr.Body, maxBody))
					hr.Body.Close()
					q.resp.Status, q.resp.Header, q.resp.Body = hr.StatusCode, hr.Header, b
				}
				q.resp.Err = err
			}
			q.resp.End = time.Now()
			if c != nil && c.global {
				c.leave()
			}
		})
	}
	settle(ctx)
	for _, q := range reqs {
		if q.last != nil {
			_, _ = q.conn.Write(q.last) // a failure shows in the read
		}
	}
	wg.Wait()
	return e.recordBurst(reqs, " (last-byte sync)")
}

// settle waits lastByteSettle (or until ctx ends).
func settle(ctx context.Context) {
	t := time.NewTimer(lastByteSettle)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// recordBurst keeps every request of a last-byte (or in-process) burst as
// evidence, its label tagged, and returns their responses.
func (e *Env) recordBurst(reqs []*lbReq, tag string) []Resp {
	rs := make([]Resp, len(reqs))
	for i, q := range reqs {
		x := q.x
		x.Label += tag
		x.Duration = q.resp.End.Sub(q.resp.Start)
		if q.resp.Err != nil {
			x.Error = q.resp.Err.Error()
		} else {
			x.Response = &ExchangeResponse{Status: q.resp.Status, Header: q.resp.Header, Body: q.resp.Body}
		}
		e.record(e.Target.redactExchange(x))
		e.proveBy(q.r, q.resp)
		rs[i] = q.resp
	}
	return rs
}

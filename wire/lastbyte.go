package wire

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

	"github.com/idemcheck/idemcheck/apispec"
)

// lastByteSettle is how long the burst waits, once every request but its
// last byte is written, before releasing the last bytes: the server's
// time to parse every request's headers and enter its handler.
const lastByteSettle = 50 * time.Millisecond

// lbReq is one request of a last-byte burst.
type lbReq struct {
	i    int
	x    Exchange
	base string
	done func() // Around's, once the answer is read
	head []byte // everything but the last byte (HTTP/1.1)
	last []byte
	conn net.Conn
	resp Resp
}

// LastByte sends a burst of requests by last-byte synchronisation: every
// request but its last byte written (on its own HTTP/1.1 connection, or as
// the streams of HTTP/2 connections: h2 where TLS negotiates it, h2c with
// prior knowledge where the target speaks HTTP/2 only), then the last
// bytes released together. A target that speaks HTTP/2 only never gets an
// HTTP/1.1 burst.
type LastByte struct {
	Target *apispec.Target
	// Timeout bounds the whole burst (zero: a minute).
	Timeout time.Duration
	// Around, when set, is called just before request i is first written;
	// the function it returns, once its answer has been read (a global
	// counter reads around each request).
	Around func(i int) (done func())
}

// Send sends xs[i] to bases[i] (the base URL its URL starts with). ok is
// false, with why, when it cannot (an empty body has no last byte to hold
// back; a connection could not be opened): no request was sent then (at
// most a warming GET), and the caller falls back to a barrier. Otherwise
// rs are the answers and out the exchanges as sent, labelled "(last-byte
// sync)", with their responses; how says how they were released.
func (lb LastByte) Send(ctx context.Context, xs []Exchange, bases []string) (rs []Resp, out []Exchange, how string, ok bool, why string) {
	reqs := make([]*lbReq, len(xs))
	for i, x := range xs {
		if len(x.Request.Body) == 0 {
			return nil, nil, "", false, "the body is empty: no last byte to hold back"
		}
		reqs[i] = &lbReq{i: i, x: x, base: bases[i]}
	}
	timeout := lb.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	deadline := time.Now().Add(timeout)
	if sessions, whyNot, err := lb.h2Sessions(ctx, reqs, deadline); err != nil {
		return nil, nil, "", false, err.Error()
	} else if whyNot != "" {
		return nil, nil, "", false, whyNot
	} else if sessions != nil {
		lb.h2Burst(ctx, sessions, reqs, deadline)
		rs, out = finished(reqs, " (last-byte sync)")
		return rs, out, fmt.Sprintf("last-byte sync over HTTP/2: every stream's final DATA frame in one write per connection (%d connection(s))", len(sessions)), true, ""
	}
	if err := lb.h1Prepare(ctx, reqs, deadline); err != nil {
		return nil, nil, "", false, err.Error()
	}
	lb.h1Burst(ctx, reqs, deadline)
	rs, out = finished(reqs, " (last-byte sync)")
	return rs, out, "last-byte sync over HTTP/1.1: every request but its last byte written on its own connection, then the last bytes released together", true, ""
}

// around is lb.Around for request i, a no-op when none is set.
func (lb LastByte) around(i int) func() {
	if lb.Around == nil {
		return func() {}
	}
	return lb.Around(i)
}

// dialBase opens a connection to base's host, TLS for https (offering
// protos by ALPN); proto is what was negotiated ("" for plain TCP).
func (lb LastByte) dialBase(ctx context.Context, base string, protos []string, deadline time.Time) (conn net.Conn, proto string, err error) {
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
	if t := lb.Target.TLSConfig(); t != nil {
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
func (lb LastByte) h1Prepare(ctx context.Context, reqs []*lbReq, deadline time.Time) error {
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
		raw := buf.Bytes()
		if !bytes.HasSuffix(raw, q.x.Request.Body) {
			return errors.New("the serialised request does not end with its body")
		}
		q.head, q.last = raw[:len(raw)-1], raw[len(raw)-1:]
	}
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, q := range reqs {
		wg.Go(func() {
			q.conn, errs[i] = lb.warmConn(ctx, q.base, deadline)
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
func (lb LastByte) warmConn(ctx context.Context, base string, deadline time.Time) (net.Conn, error) {
	conn, _, err := lb.dialBase(ctx, base, []string{"http/1.1"}, deadline)
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
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxBody))
			resp.Body.Close()
			if !resp.Close {
				return conn, nil
			}
		}
	}
	conn.Close()
	conn, _, err = lb.dialBase(ctx, base, []string{"http/1.1"}, deadline)
	return conn, err
}

// h1Burst writes each request's head on its connection, lets the server
// take them in, writes every last byte in one loop and reads the answers.
func (lb LastByte) h1Burst(ctx context.Context, reqs []*lbReq, deadline time.Time) {
	stop := context.AfterFunc(ctx, func() {
		for _, q := range reqs {
			q.conn.Close()
		}
	})
	defer stop()
	var wg sync.WaitGroup
	for _, q := range reqs {
		_ = q.conn.SetDeadline(deadline)
		q.done = lb.around(q.i)
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
					b, err = io.ReadAll(io.LimitReader(hr.Body, MaxBody))
					hr.Body.Close()
					q.resp.Status, q.resp.Header, q.resp.Body = hr.StatusCode, hr.Header, b
				}
				q.resp.Err = err
			}
			q.resp.End = time.Now()
			q.done()
		})
	}
	settle(ctx)
	for _, q := range reqs {
		if q.last != nil {
			_, _ = q.conn.Write(q.last) // a failure shows in the read
		}
	}
	wg.Wait()
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

// finished is the answers to reqs and their exchanges as sent, their
// labels tagged with how.
func finished(reqs []*lbReq, tag string) ([]Resp, []Exchange) {
	rs := make([]Resp, len(reqs))
	xs := make([]Exchange, len(reqs))
	for i, q := range reqs {
		x := q.x
		x.Label += tag
		x.Duration = q.resp.End.Sub(q.resp.Start)
		if q.resp.Err != nil {
			x.Error = q.resp.Err.Error()
		} else {
			x.Response = &ExchangeResponse{Status: q.resp.Status, Header: q.resp.Header, Body: q.resp.Body}
		}
		rs[i], xs[i] = q.resp, x
	}
	return rs, xs
}

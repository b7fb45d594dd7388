package chaos

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// connPool is the proxy's default upstream client: HTTP/1.1 keep-alive
// connections, each exchange written and read on the caller's goroutine.
// http.Transport hands every request to a writer and a reader goroutine
// per connection; on loopback those hand-offs cost more than the
// exchange itself. It never re-sends a request: an exchange that fails
// on a connection is that exchange's error.
type connPool struct {
	addr   string
	tls    *tls.Config // nil for http
	dialer net.Dialer
	max    int // idle connections kept

	mu     sync.Mutex
	idle   []*upConn
	closed bool
}

type upConn struct {
	net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	probe *openProbe
	dl    deadlines
}

func newConnPool(u *url.URL, maxIdle int, tc *tls.Config) *connPool {
	p := &connPool{addr: hostPort(u), max: maxIdle,
		dialer: net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}}
	if u.Scheme == "https" {
		p.tls = &tls.Config{}
		if tc != nil {
			p.tls = tc.Clone()
		}
		// The pool speaks HTTP/1.1 only.
		p.tls.ServerName, p.tls.NextProtos = u.Hostname(), []string{"http/1.1"}
	}
	return p
}

// get returns an idle connection that the upstream has not closed, or a
// new one.
func (p *connPool) get(ctx context.Context) (*upConn, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if c.br.Buffered() == 0 && c.probe.stillOpen() {
			return c, nil
		}
		_ = c.Close()
	}
	var (
		conn net.Conn
		err  error
	)
	if p.tls != nil {
		conn, err = (&tls.Dialer{NetDialer: &p.dialer, Config: p.tls}).DialContext(ctx, "tcp", p.addr)
	} else {
		conn, err = p.dialer.DialContext(ctx, "tcp", p.addr)
	}
	if err != nil {
		return nil, err
	}
	return &upConn{Conn: conn, br: bufio.NewReaderSize(conn, 16<<10), bw: bufio.NewWriterSize(conn, 16<<10), probe: newOpenProbe(conn)}, nil
}

func (p *connPool) put(c *upConn) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < p.max {
		p.idle = append(p.idle, c)
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// CloseIdleConnections closes the idle connections; the pool keeps
// working (new exchanges dial again).
func (p *connPool) CloseIdleConnections() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		_ = c.Close()
	}
}

// RoundTrip sends req on one connection and reads the response head; the
// body reads from the connection, which returns to the pool once the
// body was read to its end and closed. The context's deadline bounds the
// whole exchange (the proxy's contexts carry no other cancellation).
func (p *connPool) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	c, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	dl, _ := ctx.Deadline()
	c.dl.set(c, dl)
	if err := writeRequest(c.bw, req); err != nil {
		_ = c.Close()
		return nil, err
	}
	if err := c.bw.Flush(); err != nil {
		_ = c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(c.br, req)
	// Informational answers (100 Continue, 103 Early Hints) precede the final one.
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(c.br, req)
	}
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		_ = c.Close()
		return nil, errSwitchedProtocols
	}
	resp.Body = &poolBody{rc: resp.Body, c: c, p: p, reuse: !resp.Close}
	return resp, nil
}

var errSwitchedProtocols = errors.New("upstream switched protocols; the proxy forwards HTTP/1.1 only")

// writeRequest serializes req into bw so that head and body leave in one
// write (Request.Write flushes the head before the body). A body of
// unknown length goes through Request.Write (chunked).
func writeRequest(bw *bufio.Writer, req *http.Request) error {
	if req.Body != nil && req.ContentLength < 0 {
		return req.Write(bw)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	_, _ = bw.WriteString(req.Method)
	_ = bw.WriteByte(' ')
	_, _ = bw.WriteString(req.URL.RequestURI())
	_, _ = bw.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = bw.WriteString(host)
	_, _ = bw.WriteString("\r\n")
	for k, vv := range req.Header {
		if k == "Host" || k == "Content-Length" {
			continue
		}
		for _, v := range vv {
			_, _ = bw.WriteString(k)
			_, _ = bw.WriteString(": ")
			_, _ = bw.WriteString(v)
			_, _ = bw.WriteString("\r\n")
		}
	}
	n := req.ContentLength
	if req.Body == nil {
		n = 0
	}
	if n > 0 || req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch {
		var num [20]byte
		_, _ = bw.WriteString("Content-Length: ")
		_, _ = bw.Write(strconv.AppendInt(num[:0], n, 10))
		_, _ = bw.WriteString("\r\n")
	}
	_, err := bw.WriteString("\r\n")
	if n > 0 {
		var m int64
		m, err = io.CopyN(bw, req.Body, n)
		if err == nil && m != n {
			err = io.ErrUnexpectedEOF
		}
	}
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return err
}

// poolBody gives the connection back when its body was read whole.
type poolBody struct {
	rc    io.ReadCloser
	c     *upConn
	p     *connPool
	reuse bool
	eof   bool
}

func (b *poolBody) Read(buf []byte) (int, error) {
	if b.c == nil {
		return 0, io.EOF
	}
	n, err := b.rc.Read(buf)
	if err == io.EOF {
		b.eof = true
	} else if err != nil {
		b.reuse = false
	}
	return n, err
}

func (b *poolBody) Close() error {
	if b.c == nil {
		return nil
	}
	c := b.c
	b.c = nil
	_ = b.rc.Close()
	if b.eof && b.reuse {
		b.p.put(c) // its deadline is set again by the next exchange
		return nil
	}
	return c.Close()
}

// pools is the default upstream client of a proxy with several upstreams
// (replicas): one connPool per host.
type pools map[string]*connPool

func newPools(us []*url.URL, tc *tls.Config) http.RoundTripper {
	if len(us) == 1 {
		return newConnPool(us[0], 1024, tc)
	}
	ps := pools{}
	for _, u := range us {
		ps[u.Host] = newConnPool(u, 1024, tc)
	}
	return ps
}

func (ps pools) RoundTrip(req *http.Request) (*http.Response, error) {
	p, ok := ps[req.URL.Host]
	if !ok {
		return nil, fmt.Errorf("no upstream %s", req.URL.Host)
	}
	return p.RoundTrip(req)
}

func (ps pools) CloseIdleConnections() {
	for _, p := range ps {
		p.CloseIdleConnections()
	}
}

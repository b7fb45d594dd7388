package chaos

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// truncateRequest sends the upstream the request line, the headers (with
// the full Content-Length) and only part of the body, then closes that
// connection; the client connection is closed too. The upstream never
// got the whole request, so it must not record the key.
type truncateRequest struct{ bytes int }

func init() {
	register("truncate-request", func(p params) (Fault, error) {
		n, err := p.intValue("bytes", -1)
		return truncateRequest{n}, err
	})
}

func (truncateRequest) Kind() string { return "truncate-request" }

func (f truncateRequest) Serve(x *Relay) {
	n := f.bytes
	if n < 0 || n >= len(x.Body) {
		n = len(x.Body) / 2
	}
	u := Upstream{Error: fmt.Sprintf("truncated: sent %d of %d body bytes, then closed", n, len(x.Body))}
	if err := x.sendPartial(n); err != nil {
		u.Error = err.Error()
	}
	x.p.count(true, false)
	x.ev.Upstream = append(x.ev.Upstream, u)
	x.Abort("fin")
}

// sendPartial writes the serialized request minus the body's tail on a
// fresh upstream connection and closes it.
func (x *Relay) sendPartial(n int) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.r.Context()), 5*time.Second)
	defer cancel()
	conn, _, err := x.sendOwn(ctx, n)
	if err != nil {
		return fmt.Errorf("truncate-request: %w", err)
	}
	return conn.Close()
}

// sendOwn writes the serialized request, its body cut to n bytes, on a
// fresh upstream connection of its own (no pool: the fault then closes
// it as it likes) and returns the connection and the request written.
func (x *Relay) sendOwn(ctx context.Context, n int) (net.Conn, *http.Request, error) {
	out := x.p.upstreamRequest(ctx, x.r, x.Body)
	var buf bytes.Buffer
	if err := out.Write(&buf); err != nil {
		return nil, nil, err
	}
	wire := buf.Bytes()[:buf.Len()-len(x.Body)+n]
	var (
		conn net.Conn
		err  error
	)
	d := &net.Dialer{Timeout: 5 * time.Second}
	if out.URL.Scheme == "https" {
		cfg := &tls.Config{}
		if x.p.opts.tls != nil {
			cfg = x.p.opts.tls.Clone()
		}
		// The request is written as HTTP/1.1.
		cfg.ServerName, cfg.NextProtos = out.URL.Hostname(), []string{"http/1.1"}
		conn, err = (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(ctx, "tcp", hostPort(out.URL))
	} else {
		conn, err = d.DialContext(ctx, "tcp", hostPort(out.URL))
	}
	if err != nil {
		return nil, nil, err
	}
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(wire); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	_ = conn.SetWriteDeadline(time.Time{})
	return conn, out, nil
}

// hostPort is the URL's host with its scheme's default port filled in.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

package chaos

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
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
	out := x.p.upstreamRequest(ctx, x.r, x.Body)
	var buf bytes.Buffer
	if err := out.Write(&buf); err != nil {
		return err
	}
	wire := buf.Bytes()[:buf.Len()-len(x.Body)+n]
	var (
		conn net.Conn
		err  error
	)
	d := &net.Dialer{Timeout: 5 * time.Second}
	if out.URL.Scheme == "https" {
		conn, err = (&tls.Dialer{NetDialer: d}).DialContext(ctx, "tcp", hostPort(out.URL))
	} else {
		conn, err = d.DialContext(ctx, "tcp", hostPort(out.URL))
	}
	if err != nil {
		return fmt.Errorf("truncate-request: %w", err)
	}
	defer conn.Close()
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(wire); err != nil {
		return fmt.Errorf("truncate-request: %w", err)
	}
	return nil
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

package chaos

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"
)

// hangup is a client that gives up while the handler runs: it sends the
// whole request upstream on a connection of its own, waits after= for
// the first byte of an answer and, when none came, closes (mode=fin) or
// resets (mode=rst) that connection. On many stacks the hang-up cancels
// the request's context while the handler runs: the effect commits, a
// result write that uses that context is cancelled, the claim is
// released and the retry executes again (fullstackhero/dotnet-starter-kit
// PR #1333). The client's own connection is closed too; it cannot know
// whether the request ran. Over gRPC the call is cancelled after= it was
// sent (RST_STREAM CANCEL to the server), and the client's call ends as
// drop-response's does (UNAVAILABLE). The hang-up falls inside the
// handler only when the handler takes longer than after= (a slow
// request); an upstream that answered first is recorded with its answer,
// which the client does not get either.
type hangup struct {
	after time.Duration
	mode  string
}

// defaultHangupAfter is after='s default: longer than loopback takes to
// deliver a request, shorter than a slow handler.
const defaultHangupAfter = 100 * time.Millisecond

func init() {
	register("hangup", func(p params) (Fault, error) {
		after, err := p.duration("after", defaultHangupAfter)
		if err != nil {
			return nil, err
		}
		m, err := p.mode("mode", "fin", "rst")
		return hangup{after, m}, err
	})
	registerGRPC("hangup", func(p params) (grpcFault, error) {
		after, err := p.duration("after", defaultHangupAfter)
		return hangup{after: after}, err
	})
}

func (hangup) Kind() string { return "hangup" }

func (f hangup) Serve(x *Relay) {
	u := Upstream{SentNS: max(time.Since(x.ev.Time).Nanoseconds(), 0)}
	if err := f.hangUp(x, &u); err != nil {
		u.Error = err.Error()
	}
	x.p.count(true, u.Status == 0)
	x.ev.Upstream = append(x.ev.Upstream, u)
	x.Abort("fin")
}

// hangUp sends the request and hangs up unless an answer comes first;
// then u holds that answer. The error says what u holds otherwise.
func (f hangup) hangUp(x *Relay, u *Upstream) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.r.Context()), x.p.opts.timeout)
	defer cancel()
	conn, req, err := x.sendOwn(ctx, len(x.Body))
	if err != nil {
		return fmt.Errorf("hangup: %w", err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(f.after))
	if _, err := br.Peek(1); err == nil {
		// Answered within after=: the hang-up missed the handler.
		_ = conn.SetReadDeadline(time.Now().Add(x.p.opts.timeout))
		resp, err := http.ReadResponse(br, req)
		if err == nil {
			err = x.p.read(u, resp, x.ev.Key)
		}
		return err
	}
	if f.mode == "rst" {
		c := conn
		if tc, ok := c.(*tls.Conn); ok {
			c = tc.NetConn()
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
	}
	return fmt.Errorf("hung up (%s) %s after sending the whole request, before any answer", f.mode, f.after)
}

// serveGRPC cancels the upstream call after= it was sent.
func (f hangup) serveGRPC(x *callExchange) error {
	x.ev.Upstream = append(x.ev.Upstream, *x.forwardCut(f.after))
	return x.drop("unavailable")
}

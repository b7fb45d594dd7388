package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// Resp is what came back for one Req.
type Resp struct {
	Status int
	Header http.Header
	Body   []byte
	Err    error
	// Start is when the request was started, Sent when it was fully
	// written to the connection (zero if it never was), End when the body
	// was read.
	Start, Sent, End time.Time
	// Proto is the protocol the answer came over ("HTTP/1.1", "HTTP/2.0"),
	// empty without one.
	Proto string
	// Binary is a gRPC answer's message (or error status) in deterministic
	// binary protobuf encoding; nil for an HTTP answer.
	Binary []byte
	// Work is the least time the server spends executing this request:
	// the slow variant's declared duration when it carried that body, else
	// zero (see ReachedBy).
	Work time.Duration
}

// ReachedBy is the latest moment the server can have looked r's key up:
// its answer, less the work an execution of it takes at the least, and
// never before it was sent. A stalled machine can hold a request written
// early for seconds before the server reads it, so the send time alone
// would blame the server for a lookup that came after the key expired.
// A slow re-execution answered late was still looked up about when it
// was sent. A request never answered is judged by when it gave up.
func (r Resp) ReachedBy() time.Time {
	if r.End.IsZero() {
		return r.SentAt()
	}
	at := r.End.Add(-r.Work)
	if sent := r.SentAt(); at.Before(sent) {
		return sent
	}
	return at
}

// SentAt is when r's request was fully written, or, when it never was,
// when it was started. The server cannot have seen the request earlier,
// and a client stall before the write (dialing, a busy scheduler) does
// not count against the server.
func (r Resp) SentAt() time.Time {
	if r.Sent.IsZero() {
		return r.Start
	}
	return r.Sent
}

// ErrStaleConn marks a transport error on a reused keep-alive connection
// before any response byte: the server may have closed the connection as
// idle just as the request went out (Node closes idle connections after
// 5 s), so the request may never have reached it. It says nothing about
// idempotency; Env.lostConn turns it into an inconclusive verdict.
var ErrStaleConn = errors.New("transport error on a reused keep-alive connection before any response byte (the server may have closed it as idle)")

// OK reports a 2xx response.
func (r Resp) OK() bool { return r.Err == nil && r.Status >= 200 && r.Status < 300 }

// Is4xx reports a 4xx response.
func (r Resp) Is4xx() bool { return r.Err == nil && r.Status >= 400 && r.Status < 500 }

// Is5xx reports a 5xx response.
func (r Resp) Is5xx() bool { return r.Err == nil && r.Status >= 500 }

// String is a short description for Observed texts.
func (r Resp) String() string {
	if r.Err != nil {
		return "transport error: " + r.Err.Error()
	}
	s := r.StatusText() // a gRPC answer: its code first
	if len(r.Body) > 0 {
		b := r.Body
		if len(b) > 160 {
			b = append(append([]byte(nil), b[:160]...), "..."...)
		}
		s += " " + strings.TrimSpace(string(b))
	}
	return s
}

// ErrNotConnected marks a transport error before any connection was
// made (a dial that failed or timed out, as on a machine too loaded to
// connect): the request never reached the server.
var ErrNotConnected = errors.New("no connection was made: the request never reached the server")

// ErrNotSent marks a transport error before the request was fully
// written, with no answer (the client refused to send it, or the
// connection failed under it): the server cannot have taken the request.
var ErrNotSent = errors.New("the request was never fully sent: no answer of the server's")

// isDial reports an error of opening the connection.
func isDial(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// NotReached reports that r failed before the server can have read it:
// on a reused connection before any response byte (ErrStaleConn), with
// no connection at all (ErrNotConnected) or before it was fully written
// (ErrNotSent). Such an answer says nothing of the server.
func (r Resp) NotReached() bool {
	return errors.Is(r.Err, ErrStaleConn) || errors.Is(r.Err, ErrNotConnected) || errors.Is(r.Err, ErrNotSent)
}

// isTimeout reports a client-side timeout: a server that never answers is
// behaviour, not a stale connection.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// HTTP is the carrier of HTTP/1.1 and HTTP/2 targets: requests built by
// Build, carried over an http.Client (one built by Client or NewClient
// never re-sends a request).
type HTTP struct {
	Target *apispec.Target
	Client *http.Client
}

// Do implements Carrier.
func (h HTTP) Do(ctx context.Context, x Exchange) (Resp, Exchange) {
	var rd io.Reader
	if len(x.Request.Body) > 0 {
		rd = bytes.NewReader(x.Request.Body)
	}
	var reused, answered atomic.Bool
	var wrote atomic.Int64 // UnixNano of WroteRequest
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused.Store(i.Reused) },
		WroteRequest: func(httptrace.WroteRequestInfo) {
			if wrote.CompareAndSwap(0, time.Now().UnixNano()) {
				notifySent(ctx)
			}
		},
		GotFirstResponseByte: func() { answered.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, x.Request.Method, x.Request.URL, rd)
	var resp Resp
	if err == nil {
		req.Header = x.Request.Header.Clone()
		x.Start = time.Now()
		resp.Start = x.Start
		var hr *http.Response
		hr, err = h.Client.Do(req)
		if err == nil {
			var b []byte
			b, err = io.ReadAll(io.LimitReader(hr.Body, MaxBody))
			hr.Body.Close()
			resp.Status, resp.Header, resp.Body, resp.Proto, resp.Binary = hr.StatusCode, hr.Header, b, hr.Proto, nil
			x.Response = &ExchangeResponse{Status: hr.StatusCode, Header: hr.Header, Body: b}
		} else if reused.Load() && !answered.Load() && ctx.Err() == nil && !isTimeout(err) {
			err = fmt.Errorf("%w: %w", ErrStaleConn, err)
		} else if isDial(err) {
			err = fmt.Errorf("%w: %w", ErrNotConnected, err)
		} else if wrote.Load() == 0 && !answered.Load() && ctx.Err() == nil && !isTimeout(err) {
			err = fmt.Errorf("%w: %w", ErrNotSent, err)
		}
		resp.End = time.Now()
		if w := wrote.Load(); w != 0 {
			resp.Sent = time.Unix(0, w)
		}
		x.Duration = resp.End.Sub(x.Start)
	}
	if err != nil {
		resp.Err = err
		x.Error = err.Error()
	}
	return resp, x
}

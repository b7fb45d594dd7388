package wire

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"
)

// NoReplay wraps a RoundTripper so that net/http never re-sends a request
// on its own. The standard Transport silently retries a request carrying
// Idempotency-Key when a reused connection dies (its body is rewindable
// through GetBody); that hides exactly the lost-response faults idemcheck
// exists to expose and can double-execute without the caller noticing.
type NoReplay struct{ Base http.RoundTripper }

// RoundTrip sends r once.
func (t NoReplay) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.GetBody != nil {
		r = r.Clone(r.Context())
		r.GetBody = nil
	}
	return t.Base.RoundTrip(r)
}

// CloseIdleConnections forwards to the wrapped transport, so that
// http.Client.CloseIdleConnections works through NoReplay.
func (t NoReplay) CloseIdleConnections() {
	if c, ok := t.Base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// idleConnTimeout: a connection idle this long is closed, never reused.
// Servers close idle keep-alive connections after a few seconds (Node 5 s,
// gunicorn 2 s); a request sent on one just as the server closes it dies
// before any answer, which would look like behaviour. With this bound, a
// request that follows a longer wait (expiry cases wait TTL + grace)
// always opens a fresh connection.
const idleConnTimeout = time.Second

// NewTransport returns a Transport wrapped in NoReplay, with Go's TLS
// defaults (system roots; Target.Transport adds the target's TLS
// settings). maxConns bounds idle connections per host (0 means 64).
func NewTransport(maxConns int) http.RoundTripper { return newTransport(maxConns, nil, false) }

// newTransport: HTTP/2 when an https server negotiates it (ALPN), HTTP/1.1
// otherwise; with h2, HTTP/2 only: h2 by ALPN over TLS, h2c with prior
// knowledge over plain TCP, and no HTTP/1.1 to fall back on.
func newTransport(maxConns int, tc *tls.Config, h2 bool) http.RoundTripper {
	if maxConns <= 0 {
		maxConns = 64
	}
	tr := &http.Transport{
		Proxy:                 nil, // never route test traffic through an environment proxy
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          maxConns,
		MaxIdleConnsPerHost:   maxConns,
		IdleConnTimeout:       idleConnTimeout,
		ResponseHeaderTimeout: 60 * time.Second,
		TLSClientConfig:       tc.Clone(),
		TLSHandshakeTimeout:   10 * time.Second,
		// A custom TLSClientConfig turns HTTP/2 off unless forced; it
		// is only ever negotiated over TLS.
		ForceAttemptHTTP2: true,
		// Never ask for gzip behind the caller's back nor decode it:
		// a request accepts only the codings it names, and its answer is
		// seen as the server sent it (fidelity/content-coding).
		DisableCompression: true,
	}
	if h2 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP2(true)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	return NoReplay{Base: tr}
}

// protoName is the protocol of a response as reports name it: HTTP/2 for
// Go's "HTTP/2.0", else as given.
func protoName(proto string) string {
	if proto == "HTTP/2.0" {
		return "HTTP/2"
	}
	return proto
}

// NewClient returns an http.Client that never re-sends a request, never
// follows redirects (a 303 to the created resource is evidence, not noise),
// and gives up after timeout.
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     NewTransport(0),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

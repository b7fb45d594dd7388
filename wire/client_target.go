package wire

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// Transport is NewTransport with the target's TLS settings (and HTTP/2
// only when it says so): the transport of an HTTP target's load (vegeta)
// and of the chaos proxy's upstream. A gRPC target's calls go through
// its carrier (NewCarrier), on every face.
func Transport(t *apispec.Target, maxConns int) http.RoundTripper {
	return newTransport(maxConns, t.TLSConfig(), t.HTTP2)
}

// Client is NewClient with the target's TLS settings (and HTTP/2 only
// when it says so): the client under an HTTP carrier, and of the
// requests that are no call of a gRPC target's (an HTTP oracle, a key
// source).
func Client(t *apispec.Target, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     newTransport(0, t.TLSConfig(), t.HTTP2),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Preflight makes sure something answers at the base URL and at every
// replica (any answer will do; Carrier.Reach) and, when the target
// declares a key_source, that it issues a key and, with ttl_from, reads
// the TTL the API advertises into t.TTL (both over hc). Every face calls
// it before any traffic; the error wraps ErrUnreachable or ErrKeySource.
// It returns the protocol the base URL answered in (HTTP/1.1, HTTP/2;
// gRPC for a gRPC target), what the run records.
func Preflight(ctx context.Context, t *apispec.Target, c Carrier, hc *http.Client) (string, error) {
	var proto string
	for i, base := range t.Bases() {
		p, err := preflightBase(ctx, t, c, base)
		if err != nil {
			return "", err
		}
		if i == 0 {
			proto = p
		}
	}
	if t.KeySource != nil {
		if _, err := FetchKey(ctx, t, hc, nil); err != nil {
			return "", err
		}
	}
	if t.TTLFrom != nil && t.TTL == 0 {
		d, err := FetchTTL(ctx, t, hc)
		if err != nil {
			return "", err
		}
		t.TTL = d // read once: every judgement of this run uses it
	}
	return proto, nil
}

// preflightBase makes sure something answers at base (one replica), and
// says in which protocol.
func preflightBase(ctx context.Context, t *apispec.Target, c Carrier, base string) (string, error) {
	// A hand-built Target may leave Timeout 0 (no per-request bound).
	d := 5 * time.Second
	if t.Timeout > 0 {
		d = min(t.Timeout, d)
	}
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	proto, err := c.Reach(pctx, base)
	if err != nil {
		if t.HTTP2 {
			err = fmt.Errorf("%v (http2: the server must speak HTTP/2: h2 by ALPN over TLS, h2c with prior knowledge over plain TCP)", err)
		}
		return "", fmt.Errorf("%w: %s: %v", apispec.ErrUnreachable, t.Redact(base), err)
	}
	return proto, nil
}

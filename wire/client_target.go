package wire

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// Transport is NewTransport with the target's TLS settings. A gRPC
// target's calls go through a GRPC carrier of their own (closed by
// CloseIdleConnections); its other requests (an HTTP oracle) over HTTP.
func Transport(t *apispec.Target, maxConns int) http.RoundTripper {
	if t.IsGRPC() {
		return grpcTransport{grpc: NewGRPC(t), http: newTransport(maxConns, t.TLSConfig(), t.HTTP2)}
	}
	return newTransport(maxConns, t.TLSConfig(), t.HTTP2)
}

// Client is NewClient with the target's TLS settings.
func Client(t *apispec.Target, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     Transport(t, 0),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Preflight makes sure something answers HTTP at the base URL and at every
// replica (any status will do), when the target declares a key_source,
// that it issues a key, and, with ttl_from, reads the TTL the API
// advertises into t.TTL. Every face calls it before any traffic; the error
// wraps ErrUnreachable or ErrKeySource. It returns the protocol the base
// URL answered in (protoName: HTTP/1.1, HTTP/2; gRPC for a gRPC target),
// what the run records.
func Preflight(ctx context.Context, t *apispec.Target, c *http.Client) (string, error) {
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
		if _, err := FetchKey(ctx, t, c, nil); err != nil {
			return "", err
		}
	}
	if t.TTLFrom != nil && t.TTL == 0 {
		d, err := FetchTTL(ctx, t, c)
		if err != nil {
			return "", err
		}
		t.TTL = d // read once: every judgement of this run uses it
	}
	if t.IsGRPC() {
		proto = "gRPC" // over HTTP/2, as every gRPC call is: the protocol is the RPC's
	}
	return proto, nil
}

// preflightBase makes sure something answers HTTP at base (one replica),
// and says in which protocol.
func preflightBase(ctx context.Context, t *apispec.Target, c *http.Client, base string) (string, error) {
	// A hand-built Target may leave Timeout 0 (no per-request bound).
	d := 5 * time.Second
	if t.Timeout > 0 {
		d = min(t.Timeout, d)
	}
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, base+"/", nil)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", apispec.ErrUnreachable, t.Redact(base), err)
	}
	resp, err := c.Do(req)
	if err != nil {
		if t.HTTP2 {
			err = fmt.Errorf("%v (http2: the server must speak HTTP/2: h2 by ALPN over TLS, h2c with prior knowledge over plain TCP)", err)
		}
		return "", fmt.Errorf("%w: %s: %v", apispec.ErrUnreachable, t.Redact(base), err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return protoName(resp.Proto), nil
}

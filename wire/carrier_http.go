package wire

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// Name implements Carrier.
func (HTTP) Name() string { return "HTTP" }

// Build implements Carrier: Build with the carrier's target.
func (h HTTP) Build(op *apispec.Operation, r Request) Exchange { return Build(h.Target, op, r) }

// Reach implements Carrier: a GET of base, any status.
func (h HTTP) Reach(ctx context.Context, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
	if err != nil {
		return "", err
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return protoName(resp.Proto), nil
}

// Close implements Carrier: the idle connections close (no keep-alive
// goroutine outlives the run).
func (h HTTP) Close() {
	if h.Client != nil { // a carrier only asked what it can do
		h.Client.CloseIdleConnections()
	}
}

// Warm implements Warmer: a client of its own with up to n connections,
// each opened by a GET of its base.
func (h HTTP) Warm(ctx context.Context, n int, bases ...string) Carrier {
	if len(bases) == 0 {
		bases = []string{h.Target.BaseURL}
	}
	c := &http.Client{Transport: newTransport(n, h.Target.TLSConfig(), h.Target.HTTP2), Timeout: h.Client.Timeout, CheckRedirect: h.Client.CheckRedirect}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, bases[i%len(bases)]+"/", nil)
			if err != nil {
				return
			}
			if resp, err := c.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	close(start)
	wg.Wait()
	return HTTP{Target: h.Target, Client: c}
}

// SendLastBytes implements LastBytes (LastByte).
func (h HTTP) SendLastBytes(ctx context.Context, xs []Exchange, bases []string, timeout time.Duration, around func(i int) (done func())) ([]Resp, []Exchange, string, bool, string) {
	return LastByte{Target: h.Target, Timeout: timeout, Around: around}.Send(ctx, xs, bases)
}

// SendsMethod implements Methods.
func (HTTP) SendsMethod() {}

// AnswersHeaderFields implements HeaderFields.
func (HTTP) AnswersHeaderFields() {}

// AnswersProblems implements Problems.
func (HTTP) AnswersProblems() {}

// NegotiatesCoding implements ContentCoding.
func (HTTP) NegotiatesCoding() {}

// KeepsBodyBytes implements RawBodies.
func (HTTP) KeepsBodyBytes() {}

// SpellsKeyHeader implements HeaderKeys.
func (HTTP) SpellsKeyHeader() {}

// SendsAsBuilt implements Verbatim.
func (HTTP) SendsAsBuilt() {}

var (
	_ Carrier       = HTTP{}
	_ LastBytes     = HTTP{}
	_ Warmer        = HTTP{}
	_ Methods       = HTTP{}
	_ HeaderFields  = HTTP{}
	_ Problems      = HTTP{}
	_ ContentCoding = HTTP{}
	_ RawBodies     = HTTP{}
	_ HeaderKeys    = HTTP{}
	_ Carrier       = (*GRPC)(nil)
	_ Warmer        = (*GRPC)(nil)
	_ Messages      = (*GRPC)(nil)
	_ Untimed       = (*GRPC)(nil)
)

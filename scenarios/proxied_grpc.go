package scenarios

import (
	"net/http"
	"slices"

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/wire"
)

// viaGRPCProxy is viaProxy for a gRPC target: chaos's gRPC proxy in
// front of it, faulting the calls of the target's RPCs (whose messages it
// reads with descriptors resolved as the run's own calls resolve theirs),
// the case's calls going through it on a carrier of their own.
func (e *Env) viaGRPCProxy(rules ...string) (*proxied, error) {
	t := e.Target
	pr := &proxied{outer: e}
	pr.hist = chaos.NewHistory(&pr.buf)
	var methods []string
	for _, op := range t.Operations {
		if !slices.Contains(methods, op.Path) {
			methods = append(methods, op.Path)
		}
	}
	resolver := wire.NewGRPC(t)
	opts := []chaos.Option{chaos.WithMethods(resolver.Method, methods...), chaos.WithIDPointer(e.Op.IDPointer),
		chaos.WithHistory(pr.hist), chaos.WithTimeout(t.Timeout), chaos.WithTLS(t.TLSConfig())}
	if f := t.KeyField(); f != "" {
		opts = append(opts, chaos.WithKeyField(f))
	} else {
		opts = append(opts, chaos.WithKeyHeader(t.KeyHeader))
	}
	p, err := chaos.NewGRPC(t.BaseURL, opts...)
	if err != nil {
		resolver.Close()
		return nil, err
	}
	for _, r := range rules {
		if _, err := p.AddRule(r); err != nil {
			p.Close()
			resolver.Close()
			return nil, err
		}
	}
	srv, err := chaos.ListenGRPC(p)
	if err != nil {
		p.Close()
		resolver.Close()
		return nil, err
	}
	// The case's calls: the target's in all but the address (plain text
	// on loopback; the proxy speaks TLS to a grpcs:// upstream).
	via := *t
	via.BaseURL = srv.URL
	client := wire.Client(&via, e.client.Timeout)
	pr.stop = func() {
		client.CloseIdleConnections()
		srv.Close()
		p.Close()
		resolver.Close()
	}
	pr.Env = &Env{Target: &via, Profile: e.Profile, Op: e.Op, Case: e.Case, client: client, double: e.double, oracle: e.oracle, events: e.events, keys: e.keys, ctx: e.ctx}
	return pr, nil
}

// answerLost reports whether the proxy kept r's answer from the client:
// over HTTP it cut the connection (a transport error); over gRPC it ends
// the call as a lost connection does, UNAVAILABLE, its trailer labelled
// with the fault (drop-response).
func (pr *proxied) answerLost(r wire.Resp) bool {
	if r.Err != nil {
		return true
	}
	return pr.Target.IsGRPC() && r.Status == http.StatusServiceUnavailable && r.Header.Get(chaos.FaultHeader) == "drop-response"
}

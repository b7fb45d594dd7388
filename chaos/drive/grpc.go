package drive

import (
	"context"
	"fmt"
	"slices"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/wire"
)

// startGRPCProxy is startProxy's gRPC proxy: in front of a gRPC target,
// faulting the calls of its operations' methods, whose messages it reads
// with descriptors resolved as the driver's own calls resolve theirs. The
// driver calls through it with a gRPC carrier of its own. With replicas
// the proxy sends the calls to each in turn, as the HTTP proxy does.
func startGRPCProxy(ctx context.Context, cfg config, hist *chaos.History) (*front, error) {
	t := cfg.target
	var methods []string
	for _, op := range t.Operations {
		if !slices.Contains(methods, op.Path) {
			methods = append(methods, op.Path)
		}
	}
	upstream := wire.NewGRPC(t) // the descriptors' source
	opts := []chaos.Option{chaos.WithMethods(upstream.Method, methods...), chaos.WithMarks(cfg.keyOps.mark),
		chaos.WithHistory(hist), chaos.WithSeed(cfg.seed), chaos.WithTimeout(t.Timeout), chaos.WithTLS(t.TLSConfig())}
	if f := t.KeyField(); f != "" {
		opts = append(opts, chaos.WithKeyField(f))
	} else {
		opts = append(opts, chaos.WithKeyHeader(t.KeyHeader))
	}
	bases := t.Bases()
	opts = append(opts, chaos.WithReplicas(bases[1:]...))
	proxy, err := chaos.NewGRPC(bases[0], opts...)
	if err != nil {
		upstream.Close()
		return nil, err
	}
	for _, r := range cfg.faults {
		if _, err := proxy.Add(r); err != nil {
			proxy.Close()
			upstream.Close()
			return nil, err
		}
	}
	srv, err := chaos.ListenGRPC(proxy)
	if err != nil {
		proxy.Close()
		upstream.Close()
		return nil, err
	}
	// The driver's calls: the target's in all but the address (plain
	// text on loopback; the proxy speaks TLS to a grpcs:// upstream).
	via := *t
	via.BaseURL, via.Replicas = srv.URL, nil
	calls := wire.NewGRPC(&via)
	// Both resolve the methods now, before any replica is killed: a
	// resolution is kept once made, and one made mid-run could reach a
	// replica that is down.
	for _, m := range methods {
		for _, r := range []*wire.GRPC{upstream, calls} {
			if _, err := r.Method(ctx, m); err != nil {
				calls.Close()
				srv.Close()
				proxy.Close()
				upstream.Close()
				return nil, fmt.Errorf("%s: %v", m, err)
			}
		}
	}
	return &front{url: srv.URL, counters: proxy.Counters, calls: calls, close: func() {
		calls.Close()
		srv.Close()
		proxy.Close()
		upstream.Close()
	}}, nil
}

// call is send for a gRPC target: one call through the proxy, the key
// where the target puts it (a message field, AEP-155's first_sent the
// same on every retry of the key, or metadata), bounded by the target's
// timeout as an HTTP attempt is: the call's deadline.
func (d *driver) call(ctx context.Context, op *apispec.Operation, key string, body []byte, vals wire.SetupValues) answer {
	t := d.cfg.target
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	x := wire.Build(t, op, wire.Request{Key: key, Body: body, Base: d.proxy})
	vals.Bind(&x)
	x.Request.URL, x.Request.Body = d.double.Mark(op, key, x.Request.URL, x.Request.Header, x.Request.Body)
	resp, _ := d.calls.Do(ctx, x)
	if resp.Err != nil {
		return answer{err: resp.Err}
	}
	// The proxy labels what it made up in the trailer (Idemcheck-Fault,
	// as over HTTP).
	a := answer{status: resp.Status, injected: resp.Header.Get(chaos.FaultHeader) != "" && resp.Status >= 500}
	if resp.OK() {
		a.id = op.ExecutionMark(resp.Body)
	}
	return a
}

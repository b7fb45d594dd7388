package front

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/wire"
)

// Front is a fault proxy in front of a target, listening on loopback,
// whatever carries the target's calls: the gRPC proxy (chaos.GRPCProxy)
// before a carrier whose calls carry protobuf messages (wire.Messages),
// the HTTP one (chaos.Proxy) before any other. The cases that lose an
// answer and chaos's driver start it alike (Start), and send through
// Calls.
type Front struct {
	// Target is the target as reached through the proxy: its base URL
	// the proxy's, no replicas (the proxy spreads its calls over them)
	// and HTTP/1.1 to the proxy, which cuts connections (it speaks the
	// target's protocol upstream).
	Target *apispec.Target
	// Calls carries requests to the proxy (built for Target).
	Calls wire.Carrier
	// Protocol is what the proxy carries, for the history's run line
	// (HTTP/1.1, gRPC).
	Protocol string

	addRule  func(spec string) error
	add      func(chaos.Rule) error
	counters func() chaos.Counters
	close    func()
}

// Options say how a Front proxies.
type Options struct {
	// History records every attempt (nil: none).
	History *chaos.History
	// Seed seeds the fault draws (zero: the proxy's default).
	Seed uint64
	// Replicas spreads the calls over every replica (chaos); else the
	// proxy forwards to the base URL only (a case).
	Replicas bool
	// IDPointer is where an answer holds the created id.
	IDPointer string
	// Marks, when set, reads the id the history records for a 2xx answer
	// under a key (each key's own operation's pointer, or its version for
	// an update) instead of IDPointer.
	Marks func(key string, body []byte) string
	// Timeout bounds each call through the proxy (the client's); the
	// proxy bounds its upstream leg by the target's timeout.
	Timeout time.Duration
	// Conns bounds the idle upstream connections per host (HTTP).
	Conns int
	// Resolve resolves every operation's method up front, on both sides
	// of the proxy, before any replica can be killed: a resolution is
	// kept once made, and one made mid-run could reach a replica that is
	// down (gRPC).
	Resolve bool
}

// Start starts the fault proxy in front of t and the carrier of
// calls through it. Close stops both.
func Start(ctx context.Context, t *apispec.Target, o Options) (*Front, error) {
	bases := t.Bases()
	if !o.Replicas {
		bases = bases[:1]
	}
	upstream := wire.NewCarrier(t, nil) // asked what it carries; a gRPC one resolves the methods
	if m, ok := upstream.(wire.Messages); ok {
		f, err := startGRPC(ctx, t, bases, m, o)
		if err != nil {
			upstream.Close()
			return nil, err
		}
		inner := f.close
		f.close = func() {
			inner()
			upstream.Close()
		}
		return f, nil
	}
	upstream.Close()
	return startHTTP(t, bases, o)
}

// Rules parses fault specs as a proxy in front of t takes them: with
// their gRPC forms before a carrier of protobuf messages, where a fault
// without one is refused, never applied over HTTP.
func Rules(t *apispec.Target, specs []string) ([]chaos.Rule, error) {
	c := wire.NewCarrier(t, nil)
	defer c.Close()
	if _, ok := c.(wire.Messages); ok {
		return chaos.ParseGRPCRules(specs)
	}
	return chaos.ParseRules(specs)
}

func startHTTP(t *apispec.Target, bases []string, o Options) (*Front, error) {
	conns := o.Conns
	if conns <= 0 {
		conns = 16
	}
	opts := []chaos.Option{chaos.WithReplicas(bases[1:]...), chaos.WithKeyHeader(t.KeyHeader), chaos.WithIDPointer(o.IDPointer),
		chaos.WithTransport(wire.Transport(t, conns)), chaos.WithHistory(o.History), chaos.WithSeed(o.Seed), chaos.WithTimeout(t.Timeout)}
	if keyOf := wire.KeyReader(t); keyOf != nil { // a key in the body: JSON, GraphQL, JSON-RPC
		opts = append(opts, chaos.WithKeyOf(keyOf))
	}
	if o.Marks != nil {
		opts = append(opts, chaos.WithMarks(o.Marks))
	}
	p, err := chaos.New(bases[0], opts...)
	if err != nil {
		return nil, err
	}
	srv, err := chaos.Listen(p)
	if err != nil {
		p.Close()
		return nil, err
	}
	via := *t
	via.BaseURL, via.Replicas, via.HTTP2 = srv.URL, nil, false
	calls := wire.NewCarrier(&via, wire.Client(&via, o.Timeout))
	return &Front{Target: &via, Calls: calls, Protocol: "HTTP/1.1",
		addRule:  func(spec string) error { _, err := p.AddRule(spec); return err },
		add:      func(r chaos.Rule) error { p.Add(r); return nil },
		counters: p.Counters,
		close: func() {
			calls.Close()
			_ = srv.Close()
			p.Close()
		}}, nil
}

// startGRPC is Start's gRPC proxy: it faults the calls of t's
// operations' methods, whose messages it reads with descriptors resolved
// by m as the calls' own carrier resolves theirs.
func startGRPC(ctx context.Context, t *apispec.Target, bases []string, m wire.Messages, o Options) (*Front, error) {
	var methods []string
	for _, op := range t.Operations {
		if !slices.Contains(methods, op.Path) {
			methods = append(methods, op.Path)
		}
	}
	opts := []chaos.Option{chaos.WithMethods(m.Method, methods...), chaos.WithIDPointer(o.IDPointer), chaos.WithReplicas(bases[1:]...),
		chaos.WithHistory(o.History), chaos.WithSeed(o.Seed), chaos.WithTimeout(t.Timeout), chaos.WithTLS(t.TLSConfig())}
	if f := t.KeyField(); f != "" {
		opts = append(opts, chaos.WithKeyField(f))
	} else {
		opts = append(opts, chaos.WithKeyHeader(t.KeyHeader))
	}
	if o.Marks != nil {
		opts = append(opts, chaos.WithMarks(o.Marks))
	}
	p, err := chaos.NewGRPC(bases[0], opts...)
	if err != nil {
		return nil, err
	}
	srv, err := chaos.ListenGRPC(p)
	if err != nil {
		p.Close()
		return nil, err
	}
	// The calls: the target's in all but the address (plain text on
	// loopback; the proxy speaks TLS to a grpcs:// upstream).
	via := *t
	via.BaseURL, via.Replicas = srv.URL, nil
	calls := wire.NewCarrier(&via, wire.Client(&via, o.Timeout))
	f := &Front{Target: &via, Calls: calls, Protocol: "gRPC",
		addRule:  func(spec string) error { _, err := p.AddRule(spec); return err },
		add:      func(r chaos.Rule) error { _, err := p.Add(r); return err },
		counters: p.Counters,
		close: func() {
			calls.Close()
			srv.Close()
			p.Close()
		}}
	if o.Resolve {
		for _, path := range methods {
			if _, err := m.Method(ctx, path); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %v", path, err)
			}
			if cm, ok := calls.(wire.Messages); ok {
				if _, err := cm.Method(ctx, path); err != nil {
					f.Close()
					return nil, fmt.Errorf("%s: %v", path, err)
				}
			}
		}
	}
	return f, nil
}

// URL is where the proxy listens.
func (f *Front) URL() string { return f.Target.BaseURL }

// AddRule adds the fault rule spec (in the proxy's own forms).
func (f *Front) AddRule(spec string) error { return f.addRule(spec) }

// Add adds a parsed rule (Rules).
func (f *Front) Add(r chaos.Rule) error { return f.add(r) }

// Counters are the proxy's.
func (f *Front) Counters() chaos.Counters { return f.counters() }

// Close stops the carrier of calls, the listener and the proxy.
func (f *Front) Close() { f.close() }

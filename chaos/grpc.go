package chaos

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// faultMetadata labels, in the trailer, every call the gRPC proxy ends
// under a fault (FaultHeader in HTTP terms: gRPC metadata keys are lower
// case).
const faultMetadata = "idemcheck-fault"

// Resolver gives the descriptor of a method (/package.Service/Method): by
// server reflection or a protoset, as the caller resolves its own calls.
type Resolver func(ctx context.Context, path string) (protoreflect.MethodDescriptor, error)

// WithKeyField is, for a gRPC proxy, the top-level field of the request
// message that holds the key: a string (AIP-155's request_id) or a message
// whose key field holds it (AEP-155's idempotency_key). Without it the key
// is the metadata entry WithKeyHeader names.
func WithKeyField(name string) Option { return func(o *options) { o.keyField = name } }

// WithMethods gives a gRPC proxy the unary methods it numbers, draws rules
// for and records (paths /package.Service/Method), and the resolver that
// decodes their messages: the key of a request, the created id of an
// answer. Any other call (server reflection) is passed through untouched.
func WithMethods(resolve Resolver, paths ...string) Option {
	return func(o *options) { o.resolve, o.methods = resolve, append(o.methods, paths...) }
}

// GRPCProxy is the fault proxy of a gRPC target (ListenGRPC serves it): a
// grpc.Server that knows no service, so that every call reaches one
// handler, which forwards it as raw bytes (the messages are not
// re-encoded) on one connection to the upstream, or with WithReplicas to
// each upstream in turn (one connection each, so that no balancer picks).
// A call of the methods
// WithMethods names is one attempt: numbered by its key, drawn against the
// rules (those with a gRPC form: ParseGRPCRule), written to the history
// with its answer in HTTP terms (the status google.rpc.Code maps the code
// to, the code in grpc_code), so that the checker judges it as an HTTP
// attempt. A fault may let the upstream run the call to its end and then
// drop the answer: the gRPC form of a response lost after the commit.
type GRPCProxy struct {
	opts     options
	conns    []*grpc.ClientConn // the upstream's, then the replicas'
	next     atomic.Uint64      // the connection of the next call
	inflight sync.WaitGroup     // calls being handled, and their pumps
	ruleSet
}

// NewGRPC returns a gRPC proxy in front of upstream (grpc://host:port, or
// grpcs:// with WithTLS or the system roots); WithReplicas adds servers of
// the same API (grpc:// or grpcs:// too), sent calls in turn.
func NewGRPC(upstream string, opts ...Option) (*GRPCProxy, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.transport != nil:
		return nil, errors.New("a transport is HTTP's: a gRPC proxy dials its upstream itself")
	case len(o.methods) == 0 || o.resolve == nil:
		return nil, errors.New("a gRPC proxy needs the unary methods it injects faults into, and their resolver (WithMethods)")
	}
	if err := o.defaults(); err != nil {
		return nil, err
	}
	p := &GRPCProxy{opts: o, ruleSet: newRuleSet(o.seed, o.maxKeys)}
	for i, up := range append([]string{upstream}, o.replicas...) {
		conn, err := dialGRPC(up, o)
		if err != nil {
			for _, c := range p.conns {
				_ = c.Close()
			}
			if i > 0 {
				return nil, fmt.Errorf("replica %v", err)
			}
			return nil, fmt.Errorf("upstream %v", err)
		}
		p.conns = append(p.conns, conn)
	}
	return p, nil
}

// dialGRPC is the proxy's connection to one upstream server.
func dialGRPC(upstream string, o options) (*grpc.ClientConn, error) {
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "grpc" && u.Scheme != "grpcs") || u.Port() == "" {
		return nil, fmt.Errorf("%q: want grpc://host:port or grpcs://host:port", upstream)
	}
	creds := insecure.NewCredentials()
	if u.Scheme == "grpcs" {
		tc := &tls.Config{}
		if o.tls != nil {
			tc = o.tls.Clone()
		}
		creds = credentials.NewTLS(tc)
	}
	// No retries, no service config: each attempt reaches the upstream
	// once, as the HTTP proxy's requests do (NoReplay). A server killed
	// and restarted on its port (chaos's replica kills) is dialled again
	// within a fraction of a second, not after gRPC's default backoff
	// of up to two minutes.
	conn, err := grpc.NewClient("passthrough:///"+u.Host, grpc.WithTransportCredentials(creds),
		grpc.WithDisableRetry(), grpc.WithDisableServiceConfig(), grpc.WithStatsHandler(answerStats{}),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 5 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.MaxCallRecvMsgSize(int(o.maxBody)), grpc.MaxCallSendMsgSize(int(o.maxBody))))
	if err != nil {
		return nil, fmt.Errorf("%q: %v", upstream, err)
	}
	return conn, nil
}

// conn is the connection of the next call: the upstreams in turn, so that
// a key's retries (and a duplicated call's copies) reach different ones.
func (p *GRPCProxy) conn() *grpc.ClientConn {
	if len(p.conns) == 1 {
		return p.conns[0]
	}
	return p.conns[(p.next.Add(1)-1)%uint64(len(p.conns))]
}

// AddRule parses spec for gRPC (ParseGRPCRule) and appends it.
func (p *GRPCProxy) AddRule(spec string) (Rule, error) {
	r, err := ParseGRPCRule(spec)
	if err != nil {
		return Rule{}, err
	}
	return p.add(*r), nil
}

// Add appends a copy of a parsed rule and returns it with its ID; a rule
// parsed for HTTP (ParseRule) is parsed again from its spec for gRPC, and
// refused when its kind or parameters have no gRPC form.
func (p *GRPCProxy) Add(r Rule) (Rule, error) {
	if r.call == nil {
		g, err := ParseGRPCRule(r.Spec)
		if err != nil {
			return Rule{}, err
		}
		r.call = g.call
	}
	return p.add(r), nil
}

// Close waits for calls in progress (their history lines included; each
// is bounded by WithTimeout) and closes the upstream connection. Stop
// the server first (GRPCServer.Close).
func (p *GRPCProxy) Close() {
	p.inflight.Wait()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// handle serves every call the server receives.
func (p *GRPCProxy) handle(_ any, ss grpc.ServerStream) error {
	p.inflight.Add(1)
	defer p.inflight.Done()
	method, _ := grpc.MethodFromServerStream(ss)
	if !slices.Contains(p.opts.methods, method) {
		return p.pass(ss, method)
	}
	start := time.Now()
	var req []byte
	if err := ss.RecvMsg(&req); err != nil {
		return err // the client went away before its message arrived
	}
	md, _ := metadata.FromIncomingContext(ss.Context())
	var msg *dynamicpb.Message
	if p.opts.keyField != "" || p.opts.history != nil {
		msg = p.decode(ss.Context(), method, req, true)
	}
	key := p.key(msg, md)
	attempt, rule := p.draw(key, func(s *Select, attempt int) bool { return s.matchesCall(method, md, attempt) })
	x := &callExchange{ss: ss, p: p, method: method, md: md, body: req, ev: Event{
		Type: "attempt", Time: start.UTC(), Key: key, Attempt: attempt, Method: "POST", Path: method,
	}}
	if p.opts.history != nil {
		x.ev.RequestSHA256 = canonicalDigest(msg, req)
	}
	defer func() {
		x.ev.DurationNS = time.Since(start).Nanoseconds()
		p.opts.history.write(&x.ev)
	}()
	if rule == nil {
		return x.respond(x.Forward())
	}
	x.ev.Fault, x.ev.Rule = rule.Kind, rule.ID
	return rule.call.serveGRPC(x)
}

// matchesCall is matches for a gRPC call: its method is POST (as on the
// wire), its path /package.Service/Method, its header the metadata.
func (s *Select) matchesCall(path string, md metadata.MD, attempt int) bool {
	if s.Attempt != 0 && s.Attempt != attempt {
		return false
	}
	if s.Method != "" && s.Method != "POST" {
		return false
	}
	if s.Path != "" && !pathMatches(s.Path, path) {
		return false
	}
	if s.Header != "" {
		v := ""
		if vs := md.Get(s.Header); len(vs) > 0 {
			v = vs[0]
		}
		return v == s.Value
	}
	return true
}

// key is the call's idempotency key: the request message's key field
// (WithKeyField), else the key metadata entry; "" when it has none or the
// message (m, nil when it did not decode) has none.
func (p *GRPCProxy) key(m *dynamicpb.Message, md metadata.MD) string {
	if p.opts.keyField == "" {
		if vs := md.Get(p.opts.keyHeader); len(vs) > 0 {
			return vs[0]
		}
		return ""
	}
	if m == nil {
		return ""
	}
	fields := m.Descriptor().Fields()
	fd := fields.ByName(protoreflect.Name(p.opts.keyField))
	if fd == nil {
		fd = fields.ByJSONName(p.opts.keyField)
	}
	switch {
	case fd == nil || fd.IsList() || fd.IsMap():
		return ""
	case fd.Kind() == protoreflect.StringKind:
		return m.Get(fd).String()
	case fd.Kind() == protoreflect.MessageKind: // AEP-155: {key, first_sent}
		sub := m.Get(fd).Message()
		if k := sub.Descriptor().Fields().ByName("key"); k != nil && k.Kind() == protoreflect.StringKind {
			return sub.Get(k).String()
		}
	}
	return ""
}

// decode is b as the method's request (input) or response message; nil
// when the method does not resolve or b does not decode.
func (p *GRPCProxy) decode(ctx context.Context, method string, b []byte, input bool) *dynamicpb.Message {
	// Resolution is the caller's (cached after the first call), bounded
	// by the proxy's timeout, not by a client that may have gone.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.timeout)
	defer cancel()
	md, err := p.opts.resolve(ctx, method)
	if err != nil {
		return nil
	}
	d := md.Output()
	if input {
		d = md.Input()
	}
	m := dynamicpb.NewMessage(d)
	if proto.Unmarshal(b, m) != nil {
		return nil
	}
	return m
}

// canonicalDigest digests a message in one encoding whatever the sender's
// field order (a dynamic message's varies from call to call): m
// re-encoded deterministically, or raw, its bytes as they came, when it
// did not decode.
func canonicalDigest(m *dynamicpb.Message, raw []byte) string {
	if m != nil {
		if b, err := (proto.MarshalOptions{Deterministic: true}).Marshal(m); err == nil {
			return digest(b)
		}
	}
	return digest(raw)
}

// pass forwards a call of another method (server reflection, a
// streaming method) message by message both ways, unrecorded and never
// faulted.
func (p *GRPCProxy) pass(ss grpc.ServerStream, method string) error {
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	md, _ := metadata.FromIncomingContext(ctx)
	up, err := p.conn().NewStream(metadata.NewOutgoingContext(ctx, forwardMetadata(md)),
		&grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	// The client's messages go up from their own goroutine; it ends when
	// the client half-closes or the call ends (this handler returning
	// ends it), and Close waits for it.
	p.inflight.Go(func() {
		for {
			var m []byte
			if err := ss.RecvMsg(&m); err != nil {
				if err == io.EOF {
					_ = up.CloseSend()
				} else {
					cancel()
				}
				return
			}
			if up.SendMsg(&m) != nil {
				return // the upstream ended the call: RecvMsg below says how
			}
		}
	})
	if hdr, err := up.Header(); err == nil && len(hdr) > 0 {
		_ = ss.SendHeader(hdr)
	}
	for {
		var m []byte
		if err := up.RecvMsg(&m); err != nil {
			ss.SetTrailer(up.Trailer())
			if err == io.EOF {
				return nil
			}
			return err // the upstream's status, passed on
		}
		if err := ss.SendMsg(&m); err != nil {
			return err
		}
	}
}

// forwardMetadata is the client's metadata less what HTTP/2 and gRPC set
// on each hop themselves.
func forwardMetadata(md metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, vs := range md {
		switch {
		case k == "content-type", k == "te", k == "user-agent", strings.HasPrefix(k, "grpc-"), strings.HasPrefix(k, ":"):
			continue
		}
		out[k] = vs
	}
	return out
}

// rawCodec carries messages as the bytes they arrived in: the proxy
// forwards them without knowing (or re-encoding) their types. Its name is
// proto's, so that both ends see application/grpc+proto.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("chaos: raw codec given a %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(*b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("chaos: raw codec given a %T", v)
	}
	*b = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// answeredKey keys, in an upstream call's context, whether the upstream
// answered it at all.
type answeredKey struct{}

// answerStats marks a call answered when a header or trailer of it
// arrives: an error without either is the transport's, not the
// upstream's answer.
type answerStats struct{}

func (answerStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (answerStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (answerStats) HandleConn(context.Context, stats.ConnStats)                       {}
func (answerStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	switch s.(type) {
	case *stats.InHeader, *stats.InTrailer:
		if a, _ := ctx.Value(answeredKey{}).(*atomic.Bool); a != nil {
			a.Store(true)
		}
	}
}

// GRPCServer is a GRPCProxy listening on a TCP address.
type GRPCServer struct {
	URL    string // grpc://127.0.0.1:41234
	srv    *grpc.Server
	served chan struct{}
}

// ListenGRPC serves p on a free port of 127.0.0.1, in plain text (the
// proxy dials a grpcs:// upstream over TLS itself).
func ListenGRPC(p *GRPCProxy) (*GRPCServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(p.handle), grpc.ForceServerCodecV2(rawCodec{}),
		grpc.MaxRecvMsgSize(int(p.opts.maxBody)), grpc.MaxSendMsgSize(int(p.opts.maxBody)))
	s := &GRPCServer{URL: "grpc://" + ln.Addr().String(), srv: srv, served: make(chan struct{})}
	go func() {
		defer close(s.served)
		_ = srv.Serve(ln)
	}()
	return s, nil
}

// Close stops accepting calls, lets those in progress finish (up to 5s:
// a call held to its deadline is bounded by the proxy's timeout) and then
// ends what is left.
func (s *GRPCServer) Close() {
	stopped := make(chan struct{})
	go func() {
		s.srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		s.srv.Stop()
		<-stopped
	}
	<-s.served
}

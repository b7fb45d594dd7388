package clientcheck

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference/grpcref"
	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
)

// The gRPC stand-in serves, one server per case run on its own loopback
// port (a gRPC client has no path prefix to tell runs apart), either the
// reference's PaymentService (AIP-155's request_id on CreatePayment,
// AEP-155's idempotency_key on CreateRefund) through grpcref over a
// memory store, or, when the config names a protoset, the config's
// methods of any service in it (grpc_protoset.go). The faults are the
// HTTP stand-in's as gRPC statuses; a lost answer is the committed call
// ended UNAVAILABLE.

// grpcCodes are the statuses the HTTP faults become.
var grpcCodes = map[int]codes.Code{
	http.StatusConflict:            codes.Aborted,
	http.StatusTooManyRequests:     codes.ResourceExhausted,
	http.StatusInternalServerError: codes.Internal,
	http.StatusBadGateway:          codes.Unavailable,
	http.StatusServiceUnavailable:  codes.Unavailable,
	http.StatusGatewayTimeout:      codes.DeadlineExceeded,
	http.StatusBadRequest:          codes.InvalidArgument,
	http.StatusUnprocessableEntity: codes.FailedPrecondition,
}

// grpcStandIn opens a gRPC server per run.
type grpcStandIn struct {
	target *apispec.Target
	hold   time.Duration
	// keyRequired: a protoset service refuses a call without a key, as
	// the reference does under a profile that requires one.
	keyRequired bool
	// methods are the protoset's methods the config's operations name,
	// by full method (/pkg.Service/Method); nil: the reference's
	// PaymentService.
	methods map[string]*protosetMethod
}

func newGRPCStandIn(t *apispec.Target, p *apispec.Profile, hold time.Duration) (*grpcStandIn, error) {
	if t.Key == nil || t.Key.Field == "" && t.Key.Metadata == "" {
		return nil, setupErrorf(2, "key: a gRPC config names where the key goes (key: {field: request_id})")
	}
	g := &grpcStandIn{target: t, hold: hold, keyRequired: p.KeyRequired == apispec.Yes}
	if t.Protoset != "" {
		methods, err := protosetMethods(t)
		if err != nil {
			return nil, err
		}
		g.methods = methods
		return g, nil
	}
	for i, op := range t.Operations {
		switch {
		case op.RPC != paymentsv1.PaymentService_CreatePayment_FullMethodName[1:] && op.RPC != paymentsv1.PaymentService_CreateRefund_FullMethodName[1:]:
			return nil, setupErrorf(2, "operations[%d].rpc %s is not the reference's PaymentService: give protoset: (a descriptor set with its service) for any other", i, op.RPC)
		case op.Response != nil:
			return nil, setupErrorf(2, "operations[%d].response: the reference's PaymentService answers its own Payment; a configured response is for a service from protoset:", i)
		}
	}
	return g, nil
}

type grpcRun struct {
	journal
	target *apispec.Target
	hold   time.Duration
	ln     net.Listener
	srv    *grpc.Server
	svc    *grpcref.Service // the reference's; nil for a protoset's service
	names  map[string]bool
	// keyed is a protoset service's answers by key (protosetRun).
	keyed protosetStore
}

func (g *grpcStandIn) newRun(caseID string, plan Plan) (caseRun, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("stand-in: %w", err)
	}
	r := &grpcRun{journal: newJournal(caseID, plan), target: g.target, hold: g.hold, ln: ln, names: map[string]bool{}}
	if g.methods != nil {
		r.keyed = protosetStore{answers: map[string]*keyedAnswer{}, keyRequired: g.keyRequired}
		r.srv = grpc.NewServer(grpc.UnknownServiceHandler(r.protosetHandler(g.methods)))
	} else {
		svc, err := grpcref.New(grpcref.Options{}) // its own memory store, closed with it
		if err != nil {
			ln.Close()
			return nil, err
		}
		r.svc = svc
		r.srv = grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			msg, _ := req.(proto.Message)
			return r.attempt(ctx, info.FullMethod, msg, func(ctx context.Context) (proto.Message, string, error) {
				resp, err := handler(ctx, req)
				p, _ := resp.(*paymentsv1.Payment)
				if err != nil || p == nil {
					return nil, "", err
				}
				return p, p.GetName(), nil
			})
		}))
		svc.Register(r.srv)
	}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *grpcRun) BaseURL() string { return "grpc://" + r.ln.Addr().String() }

func (r *grpcRun) Close() {
	r.cancel()
	r.srv.Stop()
	r.inflight.Wait()
	if r.svc != nil {
		_ = r.svc.Close()
	}
}

// execFunc runs one attempt's call: its answer, the created resource's
// id (the same id again for a replay) or an error.
type execFunc func(ctx context.Context) (resp proto.Message, id string, err error)

// attempt journals one attempt of method with request msg and answers
// it under the run's fault, run executing the call itself.
func (r *grpcRun) attempt(ctx context.Context, method string, msg proto.Message, run execFunc) (proto.Message, error) {
	r.inflight.Add(1)
	defer r.inflight.Done()
	md, _ := metadata.FromIncomingContext(ctx)
	h := http.Header{}
	for k, vs := range md {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	body, _ := protojson.MarshalOptions{}.Marshal(msg)
	a := &Attempt{Start: time.Now(), Method: "RPC", Path: method, Header: h, Keys: r.keyOf(msg, md), Body: body}
	served := r.served(method)
	if !served {
		r.addStray(a)
		return nil, status.Errorf(codes.Unimplemented, "%s is not an operation of the stand-in's config", method)
	}
	r.add(a, "rpc")
	if r.Plan.Parallel > 1 {
		r.barrier()
	}
	f := r.faultFor(a)
	handler := func(ctx context.Context) (proto.Message, error) {
		resp, id, err := run(ctx)
		r.mu.Lock()
		defer r.mu.Unlock()
		a.End = time.Now()
		if err == nil {
			a.Status, a.RespBody = http.StatusOK, []byte(protojson.Format(resp))
			if !r.names[id] { // a resource never seen: an execution
				r.names[id] = true
				r.executions = append(r.executions, Execution{Key: a.Key(), ID: id, At: a.End})
			}
		} else if f.Kind != Drop && f.Kind != Hold {
			a.Status, a.RespBody = httpOf(status.Code(err)), []byte(status.Convert(err).Message())
		}
		return resp, err
	}
	switch f.Kind {
	case Status:
		code := grpcCodes[f.Status]
		r.mu.Lock()
		a.End = time.Now()
		a.Status, a.RespBody = httpOf(code), []byte(statusDetail(f.Status))
		a.Fault = fmt.Sprintf("answered %s without executing", code)
		r.mu.Unlock()
		return nil, status.Error(code, statusDetail(f.Status))
	case Drop:
		_, _ = handler(context.WithoutCancel(ctx))
		a.Fault = "executed, then ended the call UNAVAILABLE without its answer"
		a.Status = 0
		return nil, status.Error(codes.Unavailable, "the connection was lost")
	case Hold:
		resp, err := handler(context.WithoutCancel(ctx))
		a.Status = 0
		held := time.Now()
		t := time.NewTimer(r.hold)
		defer t.Stop()
		select {
		case <-ctx.Done():
			r.markGaveUp()
			a.Fault = fmt.Sprintf("executed, held the answer: the client gave up after %s", roundMS(time.Since(held)))
			return nil, ctx.Err()
		case <-r.held:
			r.markGaveUp()
			a.Fault = fmt.Sprintf("executed, held the answer: the client sent its next attempt after %s", roundMS(time.Since(held)))
			return nil, status.Error(codes.Unavailable, "the answer was held")
		case <-r.ctx.Done():
			a.Fault = "executed, held the answer until the run ended"
			return nil, status.Error(codes.Unavailable, "the run ended")
		case <-t.C:
			a.Fault = fmt.Sprintf("executed, held the answer %s (the bound): the client was still waiting", r.hold)
			if err == nil {
				a.Status = http.StatusOK
			}
			return resp, err
		}
	}
	return handler(ctx)
}

func (r *grpcRun) served(method string) bool {
	for _, op := range r.target.Operations {
		if "/"+op.RPC == method {
			return true
		}
	}
	return false
}

// keyOf reads the key where the config puts it: a top-level field (a
// string, or AEP-155's message's key), else a metadata entry.
func (r *grpcRun) keyOf(msg proto.Message, md metadata.MD) []string {
	k := r.target.Key
	if k.Field != "" && msg != nil {
		m := msg.ProtoReflect()
		if fd := m.Descriptor().Fields().ByName(protoreflect.Name(k.Field)); fd != nil && m.Has(fd) {
			v := m.Get(fd)
			if fd.Kind() == protoreflect.MessageKind {
				sub := v.Message()
				if kf := sub.Descriptor().Fields().ByName("key"); kf != nil && sub.Get(kf).String() != "" {
					return []string{sub.Get(kf).String()}
				}
			} else if s := v.String(); s != "" {
				return []string{s}
			}
		}
	}
	if k.Metadata != "" {
		if vs := md.Get(k.Metadata); len(vs) > 0 {
			return vs
		}
	}
	return nil
}

// httpOf is the HTTP status a gRPC code stands for in the journal.
func httpOf(c codes.Code) int {
	for s, gc := range grpcCodes {
		if gc == c && s != http.StatusBadGateway {
			return s
		}
	}
	return http.StatusInternalServerError
}

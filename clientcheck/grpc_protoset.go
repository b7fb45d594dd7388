package clientcheck

import (
	"context"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// A config with a protoset gets the stand-in for any service: each
// operation's rpc is looked up in the descriptor set (read as the server
// carrier reads it, wire.ReadProtoset), its request decoded as a dynamic
// message, and its answer built as the method's response message: the
// request's fields of the same name and type copied into it, a fresh
// resource id put in the string field id_pointer names (/name by
// default). Keys are honoured as the reference does: the first attempt
// under a key executes and its answer is kept, a later one with the same
// request gets that answer again (no execution), one with another request
// is refused INVALID_ARGUMENT; a call without a key is refused
// INVALID_ARGUMENT where the profile requires the key, else executes
// each time.

// protosetMethod is one operation's method in the protoset.
type protosetMethod struct {
	desc protoreflect.MethodDescriptor
	id   protoreflect.FieldDescriptor // the response's id field
}

// protosetMethods looks the config's operations up in its protoset: each
// a unary method whose response message has the id field.
func protosetMethods(t *apispec.Target) (map[string]*protosetMethod, error) {
	files, err := wire.ReadProtoset(t.Protoset)
	if err != nil {
		return nil, setupErrorf(2, "%v", err)
	}
	out := map[string]*protosetMethod{}
	for _, op := range t.Operations {
		svc, name, _ := strings.Cut(op.RPC, "/")
		d, err := files.FindDescriptorByName(protoreflect.FullName(svc))
		sd, ok := d.(protoreflect.ServiceDescriptor)
		if err != nil || !ok {
			return nil, setupErrorf(2, "operation %s: rpc %s: service %s is not in protoset %s", op.Name, op.RPC, svc, t.Protoset)
		}
		md := sd.Methods().ByName(protoreflect.Name(name))
		switch {
		case md == nil:
			return nil, setupErrorf(2, "operation %s: rpc %s: service %s has no method %s", op.Name, op.RPC, svc, name)
		case md.IsStreamingClient() || md.IsStreamingServer():
			return nil, setupErrorf(2, "operation %s: rpc %s is streaming: the stand-in serves unary methods", op.Name, op.RPC)
		}
		pointer := op.IDPointer
		if pointer == "" {
			pointer = "/name"
		}
		resp := md.Output()
		fd := resp.Fields().ByName(protoreflect.Name(strings.TrimPrefix(pointer, "/")))
		if strings.Count(pointer, "/") != 1 || fd == nil || fd.Kind() != protoreflect.StringKind || fd.Cardinality() == protoreflect.Repeated {
			return nil, setupErrorf(2, "operation %s: id_pointer %q: want /field, a string field of the response message %s", op.Name, pointer, resp.FullName())
		}
		out["/"+op.RPC] = &protosetMethod{desc: md, id: fd}
	}
	return out, nil
}

// protosetStore keeps a run's answers by key.
type protosetStore struct {
	keyRequired bool
	mu          sync.Mutex
	answers     map[string]*keyedAnswer
}

// keyedAnswer is the answer kept for a key, with the request it answered.
type keyedAnswer struct {
	request []byte // the request, deterministically marshalled
	resp    proto.Message
	id      string
}

// protosetHandler serves every method of methods (the server's unknown
// service handler: the protoset's services have no generated code here).
func (r *grpcRun) protosetHandler(methods map[string]*protosetMethod) grpc.StreamHandler {
	return func(_ any, ss grpc.ServerStream) error {
		full, _ := grpc.MethodFromServerStream(ss)
		m := methods[full]
		if m == nil {
			return status.Errorf(codes.Unimplemented, "%s is not an operation of the stand-in's config", full)
		}
		req := dynamicpb.NewMessage(m.desc.Input())
		if err := ss.RecvMsg(req); err != nil {
			return err
		}
		md, _ := metadata.FromIncomingContext(ss.Context())
		keys := r.keyOf(req, md)
		resp, err := r.attempt(ss.Context(), full, req, func(context.Context) (proto.Message, string, error) {
			key := ""
			if len(keys) == 1 {
				key = keys[0]
			}
			return r.keyed.execute(full+"\x00"+key, key != "", req, m)
		})
		if err != nil {
			return err
		}
		return ss.SendMsg(resp)
	}
}

// execute answers req under key: the kept answer when the key was used
// with the same request, a refusal when with another, else a new
// resource.
func (s *protosetStore) execute(key string, keyed bool, req proto.Message, m *protosetMethod) (proto.Message, string, error) {
	if !keyed && s.keyRequired {
		return nil, "", status.Error(codes.InvalidArgument, "the request carries no idempotency key")
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		return nil, "", status.Errorf(codes.Internal, "the request could not be marshalled: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if kept, ok := s.answers[key]; keyed && ok {
		if string(kept.request) != string(b) {
			return nil, "", status.Error(codes.InvalidArgument, "the idempotency key was used with another request")
		}
		return kept.resp, kept.id, nil
	}
	resp, id := newResource(req.ProtoReflect(), m)
	if keyed {
		s.answers[key] = &keyedAnswer{request: b, resp: resp, id: id}
	}
	return resp, id, nil
}

// newResource is m's response message for req: req's singular fields of
// the same name and type, and a fresh id.
func newResource(req protoreflect.Message, m *protosetMethod) (proto.Message, string) {
	resp := dynamicpb.NewMessage(m.desc.Output())
	fields := resp.Descriptor().Fields()
	req.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		to := fields.ByName(fd.Name())
		if to == nil || to.Kind() != fd.Kind() || fd.Cardinality() == protoreflect.Repeated || to.Cardinality() == protoreflect.Repeated ||
			fd.Message() != nil && (to.Message() == nil || to.Message().FullName() != fd.Message().FullName()) ||
			fd.Enum() != nil && (to.Enum() == nil || to.Enum().FullName() != fd.Enum().FullName()) {
			return true
		}
		resp.Set(to, v)
		return true
	})
	id := "id_" + randomHex(8)
	resp.Set(m.id, protoreflect.ValueOfString(id))
	return resp, id
}

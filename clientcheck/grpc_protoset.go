package clientcheck

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/wire"
)

// A config with a protoset gets the stand-in for any service: each
// operation's rpc is looked up in the descriptor set (read as the server
// carrier reads it, wire.ReadProtoset), its request decoded as a dynamic
// message, and its answer is the operation's response: body, the method's
// response message in protojson, checked against the protoset before any
// case runs. Without one the answer is built from the request: its fields
// of the same name and type copied into the response message. Either way
// each execution puts a fresh resource id in the string field id_pointer
// names (/name by default; a path of fields, by proto or JSON name, such
// as /receipt/id), into its "{id}" when the configured value has one.
// Keys are honoured as the reference does: the first attempt under a key
// executes and its answer is kept, a later one with the same request gets
// that answer again (no execution), one with another request is refused
// INVALID_ARGUMENT; a call without a key is refused INVALID_ARGUMENT where
// the profile requires the key, else executes each time.

// protosetMethod is one operation's method in the protoset.
type protosetMethod struct {
	desc protoreflect.MethodDescriptor
	// id is the path to the response's id field, a string.
	id []protoreflect.FieldDescriptor
	// response is the configured answer (nil: built from the request).
	response proto.Message
}

// protosetMethods looks the config's operations up in its protoset: each
// a unary method whose response message has the id field, and whose
// configured response, if any, is one of its response messages.
func protosetMethods(t *apispec.Target) (map[string]*protosetMethod, error) {
	files, err := wire.ReadProtoset(t.Protoset)
	if err != nil {
		return nil, setupErrorf(2, "%v", err)
	}
	out := map[string]*protosetMethod{}
	for i, op := range t.Operations {
		at := fmt.Sprintf("operations[%d]", i)
		svc, name, _ := strings.Cut(op.RPC, "/")
		d, err := files.FindDescriptorByName(protoreflect.FullName(svc))
		sd, ok := d.(protoreflect.ServiceDescriptor)
		if err != nil || !ok {
			return nil, setupErrorf(2, "%s.rpc %s: service %s is not in protoset %s", at, op.RPC, svc, t.Protoset)
		}
		md := sd.Methods().ByName(protoreflect.Name(name))
		switch {
		case md == nil:
			return nil, setupErrorf(2, "%s.rpc %s: service %s has no method %s", at, op.RPC, svc, name)
		case md.IsStreamingClient() || md.IsStreamingServer():
			return nil, setupErrorf(2, "%s.rpc %s is streaming: the stand-in serves unary methods", at, op.RPC)
		}
		pointer := op.IDPointer
		if pointer == "" {
			pointer = "/name"
		}
		path, why := fieldPath(md.Output(), pointer)
		if why != "" {
			return nil, setupErrorf(2, "%s.id_pointer %q: %s", at, pointer, why)
		}
		m := &protosetMethod{desc: md, id: path}
		if r := op.Response; r != nil {
			msg := dynamicpb.NewMessage(md.Output())
			if err := protojson.Unmarshal(r.Body, msg); err != nil {
				return nil, setupErrorf(2, "%s.response.body: %s (want a %s in protojson)", at, protoError(err), md.Output().FullName())
			}
			m.response = msg
		}
		out["/"+op.RPC] = m
	}
	return out, nil
}

// fieldPath resolves an id_pointer in msg: each step a field by its proto
// or JSON name, a singular message but the last, a singular string.
func fieldPath(msg protoreflect.MessageDescriptor, pointer string) ([]protoreflect.FieldDescriptor, string) {
	steps, err := jsonx.ParsePointer(pointer)
	if err != nil || len(steps) == 0 {
		return nil, "want /field, a string field of the response message " + string(msg.FullName())
	}
	var path []protoreflect.FieldDescriptor
	for i, step := range steps {
		fields := msg.Fields()
		fd := fields.ByName(protoreflect.Name(step))
		if fd == nil {
			fd = fields.ByJSONName(step)
		}
		last := i == len(steps)-1
		switch {
		case fd == nil:
			return nil, fmt.Sprintf("%s has no field %s", msg.FullName(), step)
		case fd.Cardinality() == protoreflect.Repeated || fd.IsMap():
			return nil, fmt.Sprintf("%s.%s is repeated: the id goes in a singular field", msg.FullName(), fd.Name())
		case last && fd.Kind() != protoreflect.StringKind:
			return nil, fmt.Sprintf("the field %s.%s (%s) is not a string: the id goes in a string field", msg.FullName(), fd.Name(), fd.Kind())
		case !last && fd.Message() == nil:
			return nil, fmt.Sprintf("the field %s.%s (%s) is not a message: the pointer goes no deeper", msg.FullName(), fd.Name(), fd.Kind())
		}
		path = append(path, fd)
		msg = fd.Message()
	}
	return path, ""
}

// protoPrefix is the prefix of protobuf-go's errors: "proto:" and a
// space or a no-break space, and for protojson the line and column, here
// of JSON made from the config's YAML, so of no use to its reader.
var protoPrefix = regexp.MustCompile(`^proto:[\s\x{a0}]*(\(line \d+:\d+\):[\s\x{a0}]*)?`)

func protoError(err error) string { return protoPrefix.ReplaceAllString(err.Error(), "") }

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
	resp, id := m.newResource(req.ProtoReflect())
	if keyed {
		s.answers[key] = &keyedAnswer{request: b, resp: resp, id: id}
	}
	return resp, id, nil
}

// newResource is m's answer to req, a new resource with a fresh id: the
// configured response, else req's singular fields of the same name and
// type in the response message.
func (m *protosetMethod) newResource(req protoreflect.Message) (proto.Message, string) {
	var resp protoreflect.Message
	if m.response != nil {
		resp = proto.Clone(m.response).ProtoReflect()
	} else {
		resp = echo(req, m.desc.Output())
	}
	at := resp
	for _, fd := range m.id[:len(m.id)-1] {
		at = at.Mutable(fd).Message()
	}
	last := m.id[len(m.id)-1]
	id := apispec.WithID(at.Get(last).String(), "id_"+randomHex(8))
	at.Set(last, protoreflect.ValueOfString(id))
	return resp.Interface(), id
}

// echo is a message of type out holding req's singular fields of the
// same name and type.
func echo(req protoreflect.Message, out protoreflect.MessageDescriptor) protoreflect.Message {
	resp := dynamicpb.NewMessage(out)
	fields := out.Fields()
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
	return resp
}

package wire

import (
	"fmt"
	"slices"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/emptypb"
)

// grpcMethod is a resolved method with the encodings its calls reuse.
type grpcMethod struct {
	md   protoreflect.MethodDescriptor
	memo messageMemo
}

// maxMemo bounds each of a method's memos: past it, a body or an answer
// not yet seen is encoded or decoded for its call alone. A load run's
// pool (100 keys by default) fits many times over.
const maxMemo = 1 << 13

// messageMemo remembers, for one method, the binary message each request
// body (protojson) encodes to and what each answer's binary message
// decodes to. Over gRPC the bodies are protojson and the messages
// binary: a dynamic message from protojson and back costs a call more
// than grpc-go's own work (docs/performance.md). A load run's hits send
// the same few bodies and get the same answers again and again, so each
// is encoded or decoded once. Both are pure functions of the bytes and
// the method's descriptors: a remembered result is the one the call
// would have computed.
//
// The messages travel through grpc-go's proto codec as the unknown
// fields of an empty message, which it writes and reads verbatim: the
// request's bytes are sent as encoded once, and an answer's bytes arrive
// undecoded, to be decoded here (only when not seen before). The wire
// and its content type are those of any proto call.
type messageMemo struct {
	requests memo[*emptypb.Empty] // by the request body
	answers  memo[answer]         // by the answer message's bytes
}

// memo is a map read under a read lock, holding up to maxMemo values:
// past that, what is not in it is computed each time.
type memo[V any] struct {
	mu sync.RWMutex
	m  map[string]V
}

func (c *memo[V]) get(k []byte) (V, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[string(k)]
	return v, ok
}

func (c *memo[V]) put(k []byte, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]V{}
	}
	if len(c.m) < maxMemo {
		c.m[string(k)] = v
	}
}

// answer is an answer message as the carrier records it: Body (compact
// protojson) and Binary (deterministic binary). Shared by every Resp of
// the same answer: read-only (capacity clipped, so an append copies).
type answer struct{ body, binary []byte }

// request is the message body (protojson of md's input) encodes to,
// ready to send: its bytes as the unknown fields of an empty message.
// Read-only: grpc-go only marshals it, which concurrent calls may do.
func (m *messageMemo) request(md protoreflect.MethodDescriptor, body []byte) (*emptypb.Empty, error) {
	if raw, ok := m.requests.get(body); ok {
		return raw, nil
	}
	in := dynamicpb.NewMessage(md.Input())
	if err := protojson.Unmarshal(body, in); err != nil {
		return nil, fmt.Errorf("the request body is not a %s in protojson: %v", md.Input().FullName(), err)
	}
	b, err := proto.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("the request does not encode: %v", err)
	}
	raw := &emptypb.Empty{}
	raw.ProtoReflect().SetUnknown(b)
	m.requests.put(body, raw)
	return raw, nil
}

// answer is what wire (an answer message of md's output, as received)
// decodes to. The error is grpc-go's own for a message that does not
// decode as the output type.
func (m *messageMemo) answer(md protoreflect.MethodDescriptor, wire []byte) (answer, error) {
	if a, ok := m.answers.get(wire); ok {
		return a, nil
	}
	out := dynamicpb.NewMessage(md.Output())
	if err := proto.Unmarshal(wire, out); err != nil {
		return answer{}, err
	}
	body, err := compactJSON(protojson.Marshal(out))
	if err != nil {
		return answer{}, fmt.Errorf("the answer does not encode as protojson: %v", err)
	}
	// Deterministic: the same message is always the same bytes, what the
	// server's own (map) order would not give; unknown fields are kept.
	binary, err := proto.MarshalOptions{Deterministic: true}.Marshal(out)
	if err != nil {
		return answer{}, fmt.Errorf("the answer does not encode: %v", err)
	}
	a := answer{body: slices.Clip(body), binary: slices.Clip(binary)}
	m.answers.put(wire, a)
	return a, nil
}

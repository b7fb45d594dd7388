package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// structServer serves /memo.S/M (google.protobuf.Struct in and out)
// without generated code: it records each request's bytes and answers
// the i-th call with answers[i % len(answers)] as raw bytes, header
// metadata x-h: 1 and trailer metadata x-t: 2. It returns
// the target (its protoset describing the method) and the requests seen.
func structServer(t *testing.T, answers ...[]byte) (*apispec.Target, func() [][]byte) {
	t.Helper()
	var mu sync.Mutex
	var seen [][]byte
	g := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, st grpc.ServerStream) error {
		in := &emptypb.Empty{}
		if err := st.RecvMsg(in); err != nil {
			return err
		}
		mu.Lock()
		seen = append(seen, bytes.Clone(in.ProtoReflect().GetUnknown()))
		out := &emptypb.Empty{}
		out.ProtoReflect().SetUnknown(answers[(len(seen)-1)%len(answers)])
		mu.Unlock()
		if err := st.SetHeader(metadata.Pairs("x-h", "1")); err != nil {
			return err
		}
		st.SetTrailer(metadata.Pairs("x-t", "2"))
		return st.SendMsg(out)
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)

	sp := protodesc.ToFileDescriptorProto(structpb.File_google_protobuf_struct_proto)
	fd := &descriptorpb.FileDescriptorProto{Name: proto.String("memo.proto"), Package: proto.String("memo"), Syntax: proto.String("proto3"),
		Dependency: []string{sp.GetName()},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("S"), Method: []*descriptorpb.MethodDescriptorProto{{
			Name: proto.String("M"), InputType: proto.String(".google.protobuf.Struct"), OutputType: proto.String(".google.protobuf.Struct")}}}}}
	b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{sp, fd}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "memo.protoset")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	tg := &apispec.Target{BaseURL: "grpc://" + ln.Addr().String(), Protoset: path, KeySyntax: apispec.Raw,
		Key: &apispec.KeyPlace{Metadata: "x-idempotency-key"}, KeyHeader: "x-idempotency-key"}
	return tg, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// fields is a Struct's encoding with its fields in the order given: each
// map entry is its own field, so two orders are one message.
func fields(t *testing.T, kv ...string) []byte {
	t.Helper()
	var b []byte
	for i := 0; i < len(kv); i += 2 {
		one, err := proto.Marshal(&structpb.Struct{Fields: map[string]*structpb.Value{kv[i]: structpb.NewStringValue(kv[i+1])}})
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, one...)
	}
	return b
}

// TestGRPCMemo: the encodings the carrier remembers (messageMemo) are the
// ones each call would compute. A repeated request body goes out as the
// same bytes as a fresh encoding of it; one answer message in two wire
// orders is one body and one binary; an answer that does not decode as
// the method's output is INTERNAL, as grpc-go makes it; the answer's
// header and trailer metadata are its header fields; and a remembered
// answer is shared with no room for an append to write into. All of it
// holds over a carrier made Untimed too.
func TestGRPCMemo(t *testing.T) {
	for _, untimed := range []bool{false, true} {
		t.Run(fmt.Sprintf("untimed=%v", untimed), func(t *testing.T) { testGRPCMemo(t, untimed) })
	}
}

func testGRPCMemo(t *testing.T, untimed bool) {
	ab, ba := fields(t, "a", "1", "b", "2"), fields(t, "b", "2", "a", "1")
	// Well-formed protobuf, but a map key that is not UTF-8: no Struct.
	entry := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0xff})
	notUTF8 := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), entry)
	tg, seen := structServer(t, ab, ba, notUTF8, ab)
	var c wire.Carrier = wire.NewGRPC(tg)
	if untimed {
		c = c.(wire.Untimed).Untimed()
	}
	defer c.Close()
	op := &apispec.Operation{Method: "POST", Path: "/memo.S/M", Body: json.RawMessage(`{"k":"v"}`)}
	var rs []wire.Resp
	for range 5 {
		r, _ := c.Do(t.Context(), wire.Build(tg, op, wire.Request{Key: "k1"}))
		rs = append(rs, r)
	}
	want := fields(t, "k", "v")
	for i, b := range seen() {
		if !bytes.Equal(b, want) {
			t.Fatalf("request %d went out as %x, want %x (the body's encoding)", i, b, want)
		}
	}
	for _, i := range []int{0, 1, 3, 4} {
		if r := rs[i]; r.Err != nil || r.Status != 200 || string(r.Body) != `{"a":"1","b":"2"}` || !bytes.Equal(r.Binary, rs[0].Binary) ||
			r.Header.Get("X-H") != "1" || r.Header.Get("X-T") != "2" || r.Header.Get("Grpc-Status") != "0" {
			t.Fatalf("answer %d: %s (binary %x, the first's %x); want one message whatever its wire order", i, r, r.Binary, rs[0].Binary)
		}
	}
	if r := rs[2]; r.Err != nil || r.Status != 500 || r.Header.Get("Grpc-Status") != "13" || !strings.Contains(string(r.Body), "failed to unmarshal the received message") {
		t.Fatalf("an answer that is no Struct: %s, want INTERNAL (500) as grpc-go says it", r)
	}
	if b := rs[0].Body; cap(b) != len(b) || cap(rs[0].Binary) != len(rs[0].Binary) {
		t.Fatalf("a remembered answer shared with room to append into (body %d/%d)", len(b), cap(b))
	}
}

// BenchmarkGRPCCall is one call of grpc.health.v1.Health/Check through
// the carrier (protojson in and out, as every face sends) beside the
// generated client's (what a bare grpc-go loop costs), on one loopback
// connection: the allocations and time the carrier adds per call.
func BenchmarkGRPCCall(b *testing.B) {
	base := healthServer(b, func(g *grpc.Server) { reflection.Register(g) })
	tg := healthTarget(base)
	b.Run("carrier", func(b *testing.B) {
		c := wire.NewGRPC(tg)
		defer c.Close()
		op := &apispec.Operation{Method: "POST", Path: "/grpc.health.v1.Health/Check", Body: json.RawMessage(`{}`)}
		x := wire.Build(tg, op, wire.Request{Key: "k1"})
		b.ReportAllocs()
		for b.Loop() {
			if r, _ := c.Do(b.Context(), x); r.Status != 200 {
				b.Fatal(r)
			}
		}
	})
	b.Run("generated", func(b *testing.B) {
		conn, err := grpc.NewClient(strings.TrimPrefix(base, "grpc://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		client := healthpb.NewHealthClient(conn)
		ctx := metadata.AppendToOutgoingContext(b.Context(), "authorization", "Bearer t", "x-idempotency-key", "k1")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

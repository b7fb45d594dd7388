package initconfig

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// testService builds a service from a file descriptor written here: the
// shapes init --grpc must tell apart, without a server.
func testService(t *testing.T) protoreflect.ServiceDescriptor {
	t.Helper()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	field := func(name string, n int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string, label descriptorpb.FieldDescriptorProto_Label) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: typ.Enum(), Label: label.Enum()}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	str, i64, msg := descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_TYPE_INT64, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	oneof := field("card", 6, str, "", opt)
	oneof.OneofIndex = proto.Int32(0)
	fd := &descriptorpb.FileDescriptorProto{
		Name: proto.String("t.proto"), Package: proto.String("t.v1"), Syntax: proto.String("proto3"),
		Dependency: []string{"google/protobuf/timestamp.proto"},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Dedup"), Field: []*descriptorpb.FieldDescriptorProto{
				field("key", 1, str, "", opt), field("first_sent", 2, msg, ".google.protobuf.Timestamp", opt)}},
			// Not AEP's shape: first_sent is a string.
			{Name: proto.String("NotDedup"), Field: []*descriptorpb.FieldDescriptorProto{
				field("key", 1, str, "", opt), field("first_sent", 2, str, "", opt)}},
			{Name: proto.String("Node"), Field: []*descriptorpb.FieldDescriptorProto{
				field("label", 1, str, "", opt), field("child", 2, msg, ".t.v1.Node", opt)}},
			{Name: proto.String("ChargeRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				field("parent", 1, str, "", opt), field("amount_cents", 2, i64, "", opt), field("tags", 3, str, "", rep),
				field("dedup", 4, msg, ".t.v1.Dedup", opt), field("tree", 5, msg, ".t.v1.Node", opt), oneof},
				OneofDecl: []*descriptorpb.OneofDescriptorProto{{Name: proto.String("source")}}},
			{Name: proto.String("OtherRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				field("note", 1, str, "", opt), field("maybe", 2, msg, ".t.v1.NotDedup", opt)}},
			{Name: proto.String("RefundRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				field("request_id", 1, str, "", opt), field("note", 2, str, "", opt)}},
			{Name: proto.String("Charge"), Field: []*descriptorpb.FieldDescriptorProto{
				field("customer", 1, str, "", opt), field("charge_id", 2, str, "", opt)}},
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Billing"), Method: []*descriptorpb.MethodDescriptorProto{
			{Name: proto.String("Charge"), InputType: proto.String(".t.v1.ChargeRequest"), OutputType: proto.String(".t.v1.Charge")},
			{Name: proto.String("Recharge"), InputType: proto.String(".t.v1.ChargeRequest"), OutputType: proto.String(".t.v1.Charge")},
			{Name: proto.String("Refund"), InputType: proto.String(".t.v1.RefundRequest"), OutputType: proto.String(".t.v1.Charge")},
			{Name: proto.String("GetCharge"), InputType: proto.String(".t.v1.OtherRequest"), OutputType: proto.String(".t.v1.Charge")},
		}}},
	}
	files := new(protoregistry.Files)
	if err := files.RegisterFile(timestamppb.File_google_protobuf_timestamp_proto); err != nil {
		t.Fatal(err)
	}
	f, err := protodesc.NewFile(fd, files)
	if err != nil {
		t.Fatal(err)
	}
	return f.Services().Get(0)
}

// TestGRPCDescribe: the key is found by shape (AEP-155's message under
// any field name, not a look-alike); the most common kind is written,
// the others named; the skeleton leaves out what it cannot fill, bounds
// recursion and writes protojson's names; the id pointer is camelCase.
func TestGRPCDescribe(t *testing.T) {
	sd := testService(t)
	d := describe([]protoreflect.ServiceDescriptor{sd}, "")
	s, err := d.selectMethods(nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.key != (keyKind{field: "dedup", firstSent: true}) || len(s.methods) != 2 || len(s.others) != 1 || s.others[0].rpc() != "t.v1.Billing/Refund" {
		t.Fatalf("selection: key %+v, %d methods, others %v; want dedup (AEP shape) on Charge and Recharge, Refund (request_id) named", s.key, len(s.methods), s.others)
	}

	sk := messageSkeleton(sd.Methods().Get(0).Input(), "dedup")
	b, _ := json.Marshal(sk.json)
	if got, want := string(b), `{"amountCents":1,"parent":"TODO","tree":{"child":{"label":"TODO"},"label":"TODO"}}`; got != want {
		t.Errorf("skeleton %s, want %s", got, want)
	}
	if got := strings.Join(sk.leftOut, ", "); got != "tags (repeated), tree.child.child (t.v1.Node), card (oneof source)" {
		t.Errorf("left out: %s", got)
	}
	if patch, name, _ := sk.mutation(); name != "amountCents" || patch["amountCents"] != 2 {
		t.Errorf("mutation %v (%s), want amountCents 2", patch, name)
	}
	if ptr, why := responseID(sd.Methods().Get(0).Output()); ptr != "/chargeId" || !strings.Contains(why, "check it is the created resource's") {
		t.Errorf("id pointer %q (%s), want /chargeId with a check", ptr, why)
	}

	// Only GetCharge (a read, a look-alike key) selected: no method.
	if _, err := d.selectMethods([]string{"t.v1.Billing/GetCharge"}); !errors.Is(err, ErrNoMethod) || !strings.Contains(err.Error(), "among the --rpc methods") {
		t.Errorf("GetCharge alone: %v", err)
	}
	// A metadata key: the methods not named like reads, guessed.
	s, err = describe([]protoreflect.ServiceDescriptor{sd}, "x-idempotency-key").selectMethods(nil)
	if err != nil || len(s.methods) != 3 || s.methods[0].guessed == "" || s.key.preset() != "grpc-metadata" {
		t.Errorf("--key-metadata: %v, %+v", err, s)
	}
}

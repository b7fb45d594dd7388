package initconfig

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/idemcheck/idemcheck/apispec"
	"go.yaml.in/yaml/v3"
)

// TestNoTraps: init guesses nothing that makes a correct API look broken
// (issue 29), one row per rule, each against a document in
// testdata/traps: the invalid variant never expects a status the document
// gives another meaning, the commented double answers an id, and the key
// syntax is the draft's unless the document shows otherwise.
func TestNoTraps(t *testing.T) {
	setTokens(t)
	type written struct {
		target  *apispec.Target
		profile *apispec.Profile
		text    string
	}
	cache := map[string]written{}
	load := func(t *testing.T, doc string) written {
		t.Helper()
		if w, ok := cache[doc]; ok {
			return w
		}
		out, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: doc, Command: "idemcheck init"})
		if err != nil {
			t.Fatal(err)
		}
		target, profile, err := apispec.ParseConfig(out)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		cache[doc] = written{target, profile, string(out)}
		return cache[doc]
	}
	// invalid is the status of op's invalid variant and its written line.
	invalid := func(t *testing.T, w written, op string) (int, string) {
		t.Helper()
		for _, o := range w.target.Operations {
			if o.Name != op {
				continue
			}
			v, ok := o.Variants[apispec.VariantInvalid]
			if !ok {
				t.Fatalf("%s: no invalid variant\n%s", op, w.text)
			}
			_, after, _ := strings.Cut(w.text, "- name: "+op+"\n")
			for _, line := range strings.Split(after, "\n") {
				if strings.Contains(line, "invalid: {") {
					return v.Status, line
				}
			}
		}
		t.Fatalf("no operation %s\n%s", op, w.text)
		return 0, ""
	}
	const provider, bare, accounts = "testdata/traps/provider.yaml", "testdata/traps/bare-key.yaml", "testdata/traps/accounts.yaml"
	op := func(t *testing.T, w written, name string) apispec.Operation {
		t.Helper()
		for _, o := range w.target.Operations {
			if o.Name == name {
				return o
			}
		}
		t.Fatalf("no operation %s\n%s", name, w.text)
		return apispec.Operation{}
	}
	for _, tc := range []struct {
		rule, doc string
		check     func(t *testing.T, w written)
	}{
		{"invalid: not the 422 the document describes as a reused key, but its 400", provider, func(t *testing.T, w written) {
			if st, line := invalid(t, w, "createOrder"); st != 400 || !strings.Contains(line, `not 422: its 422 says "another request body"`) {
				t.Errorf("status %d: %s", st, line)
			}
			if got := w.profile.MismatchStatus; len(got) != 1 || got[0] != 422 {
				t.Errorf("mismatch_status %v, want the described 422", got)
			}
		}},
		{"invalid: the only declared status means a mismatch: no status, a TODO", provider, func(t *testing.T, w written) {
			if st, line := invalid(t, w, "refundOrder"); st != 0 || !strings.Contains(line, "TODO: the status the API answers a bad body with") ||
				!strings.Contains(line, `its 422 says "mismatch"`) {
				t.Errorf("status %d: %s", st, line)
			}
		}},
		{"invalid: a status init makes mismatch_status elsewhere is not taken", provider, func(t *testing.T, w written) {
			if st, line := invalid(t, w, "createPayout"); st != 0 || !strings.Contains(line, "not 422, the mismatch_status: the 422 response of createOrder") {
				t.Errorf("status %d: %s", st, line)
			}
		}},
		{"invalid: a status with no other meaning is kept", bare, func(t *testing.T, w written) {
			if st, line := invalid(t, w, "createTransfer"); st != 400 || strings.Contains(line, "TODO") {
				t.Errorf("status %d: %s", st, line)
			}
		}},
		{"the commented double route answers an id, with a TODO to match the provider", provider, func(t *testing.T, w written) {
			var route map[string]any
			for _, b := range commentedBlocks(w.text) {
				var m struct {
					Downstream struct{ Routes []map[string]any }
				}
				if yaml.Unmarshal([]byte(b.text), &m) == nil && len(m.Downstream.Routes) == 1 {
					route = m.Downstream.Routes[0]
				}
			}
			resp, _ := route["response"].(map[string]any)
			body, _ := resp["body"].(map[string]any)
			if body["id"] != "pay_{seq}" || !strings.Contains(w.text, "# TODO: answer as the provider does") {
				t.Errorf("route %v, want a body with id pay_{seq} and a TODO\n%s", route, w.text)
			}
		}},
		{"key syntax: a uuid format keeps the draft's sf-string", provider, func(t *testing.T, w written) {
			if w.target.KeySyntax != apispec.SFString || w.profile.KeyFormat != "uuid" {
				t.Errorf("key_syntax %s, key_format %q; want sf-string, uuid", w.target.KeySyntax, w.profile.KeyFormat)
			}
		}},
		{"key syntax: an example showing the key bare is raw", bare, func(t *testing.T, w written) {
			if w.target.KeySyntax != apispec.Raw || !strings.Contains(w.text, "shown bare") {
				t.Errorf("key_syntax %s; want raw, saying why", w.target.KeySyntax)
			}
		}},
		{"id pointer: none where every answer names the same resource (a PATCH), its own oracle proposed instead", accounts, func(t *testing.T, w written) {
			if p := op(t, w, "updateAccount").IDPointer; p != "" {
				t.Errorf("updateAccount id_pointer %q: every answer names the account it changed", p)
			}
			_, after, _ := strings.Cut(w.text, "- name: updateAccount\n")
			block, _, _ := strings.Cut(after, "- name: ")
			if !strings.Contains(block, "no id_pointer: /id") || !strings.Contains(block, "    # oracle:\n    #   sql: {dsn:") {
				t.Errorf("updateAccount: want a TODO saying why no id_pointer and a commented oracle of its own:\n%s", block)
			}
			if p := op(t, w, "createOrder").IDPointer; p != "/id" {
				t.Errorf("createOrder id_pointer %q, want /id (a created order)", p)
			}
		}},
		{"key_max_len: the header schema's maxLength less the sf-string's quotes", accounts, func(t *testing.T, w written) {
			if w.target.KeySyntax != apispec.SFString || w.profile.KeyMaxLen != 64 || w.profile.KeyMinLen != 1 {
				t.Errorf("key_syntax %s, key_max_len %d, key_min_len %d; want sf-string, 64 and 1 (66 and 3 less the quotes)", w.target.KeySyntax, w.profile.KeyMaxLen, w.profile.KeyMinLen)
			}
		}},
		{"key_max_len: a uuid format describes the key itself, quotes not counted", provider, func(t *testing.T, w written) {
			if w.target.KeySyntax != apispec.SFString || w.profile.KeyMaxLen != 36 {
				t.Errorf("key_syntax %s, key_max_len %d; want sf-string and 36, a UUID's length", w.target.KeySyntax, w.profile.KeyMaxLen)
			}
		}},
		{"key_required: false written for a header parameter not required", accounts, func(t *testing.T, w written) {
			if w.profile.KeyRequired != apispec.No || !strings.Contains(w.text, "key_required: false") {
				t.Errorf("key_required %v; want false, written", w.profile.KeyRequired)
			}
		}},
		{"key_required: true written for a required one", bare, func(t *testing.T, w written) {
			if w.profile.KeyRequired != apispec.Yes || !strings.Contains(w.text, "key_required: true") {
				t.Errorf("key_required %v; want true, written", w.profile.KeyRequired)
			}
		}},
		{"every profile field the preset leaves open is written, or a commented TODO", accounts, func(t *testing.T, w written) {
			openFieldsWritten(t, w.profile, w.text)
		}},
		{"a mutation per repeated member", accounts, func(t *testing.T, w written) {
			if !slices.ContainsFunc(op(t, w, "createOrder").Mutations, func(m apispec.Mutation) bool { return strings.Contains(string(m.Patch), `"items"`) }) {
				t.Errorf("createOrder: no mutation changes items\n%s", w.text)
			}
		}},
	} {
		t.Run(tc.rule, func(t *testing.T) { tc.check(t, load(t, tc.doc)) })
	}
}

// openFieldsWritten: every field of openFields that p leaves open has its
// commented TODO line in text, and none that p sets has one.
func openFieldsWritten(t *testing.T, p *apispec.Profile, text string) {
	t.Helper()
	for _, f := range openFields {
		commented := strings.Contains(text, "# "+f.name+": ")
		if f.open(p) && !commented {
			t.Errorf("%s is left open and not written as a commented TODO: its cases skip silently", f.name)
		}
		if !f.open(p) && commented {
			t.Errorf("%s is set, yet written as a TODO", f.name)
		}
	}
}

// The google.api annotations' numbers (google/api/field_behavior.proto,
// field_info.proto), as annotatedService writes them.
const (
	fieldBehaviorExt = 1052      // FieldOptions: repeated google.api.FieldBehavior
	fieldInfoExt     = 291403980 // FieldOptions: google.api.FieldInfo
	behaviorRequired = 2         // FieldBehavior.REQUIRED
	fieldInfoFormat  = 1         // FieldInfo.format
	formatUUID4      = 1         // FieldInfo.Format.UUID4
)

// annotatedService is a gRPC service written here whose request_id
// carries google.api.field_info.format = UUID4 and field_behavior =
// REQUIRED (as their extension bytes, which a reader that does not know
// the extensions keeps as unknown fields), a repeated field, and an
// AIP-134 Update answering the resource it changed.
func annotatedService(t *testing.T) string {
	t.Helper()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	str, i64, msg := descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_TYPE_INT64, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	field := func(name string, n int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string, label descriptorpb.FieldDescriptorProto_Label) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: typ.Enum(), Label: label.Enum(), JsonName: proto.String(jsonName(name))}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	requestID := func() *descriptorpb.FieldDescriptorProto {
		f := field("request_id", 1, str, "", opt)
		f.Options = &descriptorpb.FieldOptions{}
		raw := protowire.AppendTag(nil, fieldBehaviorExt, protowire.VarintType)
		raw = protowire.AppendVarint(raw, behaviorRequired)
		info := protowire.AppendVarint(protowire.AppendTag(nil, fieldInfoFormat, protowire.VarintType), formatUUID4)
		raw = protowire.AppendBytes(protowire.AppendTag(raw, fieldInfoExt, protowire.BytesType), info)
		f.Options.ProtoReflect().SetUnknown(raw)
		return f
	}
	fd := &descriptorpb.FileDescriptorProto{
		Name: proto.String("pay.proto"), Package: proto.String("pay.v1"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Payment"), Field: []*descriptorpb.FieldDescriptorProto{
				field("name", 1, str, "", opt), field("amount", 2, i64, "", opt)}},
			{Name: proto.String("CreatePaymentRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				requestID(), field("amount", 2, i64, "", opt), field("line_items", 3, str, "", rep)}},
			{Name: proto.String("UpdatePaymentRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				requestID(), field("payment", 2, msg, ".pay.v1.Payment", opt)}},
			{Name: proto.String("CancelPaymentRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				requestID(), field("payment_id", 2, str, "", opt)}},
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Payments"), Method: []*descriptorpb.MethodDescriptorProto{
			{Name: proto.String("CreatePayment"), InputType: proto.String(".pay.v1.CreatePaymentRequest"), OutputType: proto.String(".pay.v1.Payment")},
			{Name: proto.String("UpdatePayment"), InputType: proto.String(".pay.v1.UpdatePaymentRequest"), OutputType: proto.String(".pay.v1.Payment")},
			{Name: proto.String("CancelPayment"), InputType: proto.String(".pay.v1.CancelPaymentRequest"), OutputType: proto.String(".pay.v1.Payment")},
		}}},
	}
	b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fd}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pay.protoset")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// jsonName is protoc's JSON name of a field (lowerCamelCase).
func jsonName(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// TestGRPCNoTraps: init --grpc's rules, one row per trap, against
// annotatedService: the key's annotations become key_format and
// key_required, an Update gets no id pointer but an oracle of its own,
// every repeated field a mutation, and every field the preset leaves open
// a commented TODO.
func TestGRPCNoTraps(t *testing.T) {
	out, err := FromGRPC(context.Background(), GRPCOptions{URL: "grpc://127.0.0.1:9", Protoset: annotatedService(t), Command: "idemcheck init --grpc"})
	if err != nil {
		t.Fatal(err)
	}
	target, profile, err := apispec.ParseConfig(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := string(out)
	byName := map[string]apispec.Operation{}
	for _, o := range target.Operations {
		byName[o.Name] = o
	}
	for _, tc := range []struct {
		rule  string
		check func(t *testing.T)
	}{
		{"field_info.format = UUID4 on the key field: key_format uuid (every case sends a UUID)", func(t *testing.T) {
			if profile.KeyFormat != "uuid" || !profile.KeyValid(profile.NewKey()) || profile.KeyValid(strings.Repeat("a", 36)) {
				t.Errorf("key_format %q; want uuid", profile.KeyFormat)
			}
		}},
		{"field_behavior = REQUIRED on the key field: key_required true", func(t *testing.T) {
			if profile.KeyRequired != apispec.Yes {
				t.Errorf("key_required %v; want true", profile.KeyRequired)
			}
		}},
		{"an Update answers the resource it changed: no id pointer, an oracle of its own proposed", func(t *testing.T) {
			if p := byName["update-payment"].IDPointer; p != "" || !strings.Contains(text, "no id_pointer: /name") {
				t.Errorf("update-payment id_pointer %q; want none, and a TODO saying why\n%s", p, text)
			}
			if p := byName["create-payment"].IDPointer; p != "/name" {
				t.Errorf("create-payment id_pointer %q, want /name", p)
			}
		}},
		{"an action on a resource another RPC creates (payment_id, CreatePayment): setup: per key, its id bound, kind: update", func(t *testing.T) {
			op := byName["cancel-payment"]
			if op.Setup == nil || op.Setup.RPC != "pay.v1.Payments/CreatePayment" || !strings.Contains(string(op.Body), `"paymentId":"{setup.name}"`) || !op.Updates() || op.IDPointer != "" {
				t.Errorf("cancel-payment: setup %+v, body %s, updates %v, id_pointer %q; want a CreatePayment setup bound as {setup.name}, an update, no id pointer\n%s", op.Setup, op.Body, op.Updates(), op.IDPointer, text)
			}
			if byName["create-payment"].Setup != nil {
				t.Errorf("create-payment got a setup: it makes the resource")
			}
		}},
		{"a mutation per repeated field", func(t *testing.T) {
			if !slices.ContainsFunc(byName["create-payment"].Mutations, func(m apispec.Mutation) bool { return strings.Contains(string(m.Patch), `"lineItems"`) }) {
				t.Errorf("create-payment: no mutation adds to lineItems\n%s", text)
			}
		}},
		{"every profile field the preset leaves open is written, or a commented TODO", func(t *testing.T) {
			commented := func(f string) bool { return regexp.MustCompile(`(?m)^\s*#\s+` + f + `: .*# TODO: `).MatchString(text) }
			for _, f := range []string{"cache_4xx_business", "cache_5xx", "cache_validation", "expiry"} {
				if !commented(f) {
					t.Errorf("%s: no commented TODO under overrides\n%s", f, text)
				}
			}
			for _, f := range openFields {
				if f.open(profile) && !f.httpOnly && !commented(f.name) {
					t.Errorf("%s is left open and not written as a commented TODO", f.name)
				}
			}
		}},
	} {
		t.Run(tc.rule, tc.check)
	}
}

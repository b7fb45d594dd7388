package scenarios

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
)

// uuidOnly refuses a CreatePayment whose request_id is set but no UUID
// (INVALID_ARGUMENT): an AIP-155 service that accepts only UUIDs.
func uuidOnly(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	if r, ok := req.(*paymentsv1.CreatePaymentRequest); ok && r.GetRequestId() != "" {
		if _, err := uuid.Parse(r.GetRequestId()); err != nil || len(r.GetRequestId()) != 36 {
			return nil, status.Error(codes.InvalidArgument, "request_id must be a UUID")
		}
	}
	return next(ctx, req)
}

// annotatedProtoset is the reference's descriptors with CreatePayment's
// request_id marked google.api.field_info.format = UUID4 and
// google.api.field_behavior = REQUIRED, as their extension bytes
// (field_behavior 1052: REQUIRED 2; field_info 291403980: format 1 UUID4 1).
func annotatedProtoset(t *testing.T) string {
	t.Helper()
	fd := protodesc.ToFileDescriptorProto(paymentsv1.File_payments_proto)
	for _, m := range fd.MessageType {
		if m.GetName() != "CreatePaymentRequest" {
			continue
		}
		for _, f := range m.Field {
			if f.GetName() == "request_id" {
				raw := protowire.AppendVarint(protowire.AppendTag(nil, 1052, protowire.VarintType), 2)
				info := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1)
				raw = protowire.AppendBytes(protowire.AppendTag(raw, 291403980, protowire.BytesType), info)
				f.Options = &descriptorpb.FieldOptions{}
				f.Options.ProtoReflect().SetUnknown(raw)
			}
		}
	}
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(timestamppb.File_google_protobuf_timestamp_proto), fd}}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "payments.protoset")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUUIDKeyFieldAtRunTime: a UUID-only AIP-155 service whose descriptor
// (the protoset) marks request_id UUID4, under a config that names no
// key_format (init --grpc would write one): the run reads the annotation,
// says so in its notes and sends UUIDs in every key case, so that
// syntax/max-length and the other key cases do not warn. Without the
// annotation (server reflection of the unannotated proto) max-length
// warns: the 36 characters it sends are no UUID.
func TestUUIDKeyFieldAtRunTime(t *testing.T) {
	for _, row := range []struct {
		rule      string
		annotated bool
	}{
		{"the descriptor marks the key UUID4: every key case sends a UUID, no key case warns", true},
		{"no annotation and no key_format: the 36-character key is no UUID and max-length warns", false},
	} {
		t.Run(row.rule, func(t *testing.T) {
			httpBase, g := demotest.GRPCServer(t, demo.Options{TTL: 3 * time.Second, Lease: 3 * time.Second}, nil, grpc.UnaryInterceptor(uuidOnly))
			grpcBase := demotest.ServeGRPCServer(t, g)
			cfg := grpcConfig(httpBase, grpcBase, "aip")
			cfg = strings.Replace(cfg, "key_required: true, ", "", 1)
			if row.annotated {
				cfg = "protoset: " + annotatedProtoset(t) + "\n" + cfg
			}
			tg, p, err := apispec.ParseConfig([]byte(cfg))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			rep, err := Run(ctx, tg, p, RunOptions{Run: []string{"syntax/**", "scope/case-sensitive", "security/invalid-format-rejected", "security/hostile-keys", "security/low-entropy-keys", "missing/rejected", "replay/single-execution"}})
			if err != nil {
				t.Fatal(err)
			}
			notes := strings.Join(rep.Notes, "\n")
			byID := map[string]Result{}
			for _, r := range rep.Results {
				byID[r.ID] = r
			}
			if !row.annotated {
				if r := byID["syntax/max-length"]; r.Status != Warn {
					t.Errorf("%s: %s (%s %s); want warn without the annotation: the case can fail on this service", r.Name(), r.Status, r.Observed, r.Reason)
				}
				if strings.Contains(notes, "UUID4") {
					t.Errorf("notes %q name an annotation the descriptor lacks", notes)
				}
				return
			}
			for _, want := range []string{"request_id is google.api.field_info.format = UUID4", "request_id is google.api.field_behavior = REQUIRED"} {
				if !strings.Contains(notes, want) {
					t.Errorf("notes %q; want %q", notes, want)
				}
			}
			for _, r := range rep.Results {
				if r.Status == Warn || r.Status == Fail {
					t.Errorf("%s: %s on a UUID-only service whose key field is marked UUID4: %s %s", r.Name(), r.Status, r.Observed, r.Reason)
				}
			}
			if r := byID["syntax/max-length"]; r.Status != Pass {
				t.Errorf("%s: %s (%s %s); want pass", r.Name(), r.Status, r.Observed, r.Reason)
			}
		})
	}
}

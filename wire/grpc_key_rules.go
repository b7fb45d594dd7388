package wire

import (
	"context"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/idemcheck/idemcheck/apispec"
)

// The google.api field annotations read from a gRPC key field (init writes
// them into the config; a run reads them where the config is silent), by their
// extension numbers on google.protobuf.FieldOptions (google/api/
// field_behavior.proto, field_info.proto): read from the options' wire
// form, so that they count whether or not the descriptors' reader knew
// the extensions.
const (
	fieldBehaviorExt = 1052      // repeated google.api.FieldBehavior
	fieldInfoExt     = 291403980 // google.api.FieldInfo
	behaviorRequired = 2         // FieldBehavior.REQUIRED
	fieldInfoFormat  = 1         // FieldInfo.format
	formatUUID4      = 1         // FieldInfo.Format.UUID4
)

// KeyRuler is a carrier that can read what op's key field's annotations
// say of the key (gRPC: google.api.field_info and field_behavior, from
// server reflection or the protoset).
type KeyRuler interface {
	KeyRules(ctx context.Context, op *apispec.Operation) (KeyRules, error)
}

// KeyRules implements KeyRuler: none for a metadata key.
func (g *GRPC) KeyRules(ctx context.Context, op *apispec.Operation) (KeyRules, error) {
	k := g.t.Key
	if k == nil || k.Field == "" {
		return KeyRules{}, nil
	}
	md, err := g.Method(ctx, op.Path)
	if err != nil {
		return KeyRules{}, err
	}
	return KeyFieldRules(md.Input(), k.Field, k.FirstSent), nil
}

// KeyRules is what a key field's annotations say of the key.
type KeyRules struct {
	UUID     bool // google.api.field_info.format = UUID4
	Required bool // google.api.field_behavior = REQUIRED
}

// KeyFieldRules reads the annotations of the key field named field of msg
// (for AEP-155's {key, first_sent}, of the field and of its key).
func KeyFieldRules(msg protoreflect.MessageDescriptor, field string, firstSent bool) KeyRules {
	var r KeyRules
	if field == "" {
		return r
	}
	f := msg.Fields().ByName(protoreflect.Name(field))
	if f == nil {
		return r
	}
	r = fieldRules(f)
	if firstSent && f.Message() != nil {
		if inner := f.Message().Fields().ByName("key"); inner != nil {
			ir := fieldRules(inner)
			r.UUID, r.Required = r.UUID || ir.UUID, r.Required || ir.Required
		}
	}
	return r
}

func fieldRules(f protoreflect.FieldDescriptor) KeyRules {
	var r KeyRules
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(f.Options())
	if err != nil {
		return r
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return r
		}
		b = b[n:]
		switch {
		case num == fieldBehaviorExt && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			r.Required = r.Required || v == behaviorRequired
			n = m
		case num == fieldBehaviorExt && typ == protowire.BytesType: // packed
			packed, m := protowire.ConsumeBytes(b)
			for len(packed) > 0 {
				v, k := protowire.ConsumeVarint(packed)
				if k < 0 {
					break
				}
				r.Required = r.Required || v == behaviorRequired
				packed = packed[k:]
			}
			n = m
		case num == fieldInfoExt && typ == protowire.BytesType:
			info, m := protowire.ConsumeBytes(b)
			r.UUID = r.UUID || infoUUID(info)
			n = m
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return r
		}
		b = b[n:]
	}
	return r
}

// infoUUID reports a FieldInfo whose format is UUID4.
func infoUUID(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if num == fieldInfoFormat && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return false
			}
			if v == formatUUID4 {
				return true
			}
			b = b[m:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return false
		}
		b = b[n:]
	}
	return false
}

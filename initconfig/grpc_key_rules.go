package initconfig

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The google.api field annotations init reads from the key field, by their
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

// keyRules is what the key field's annotations say of the key.
type keyRules struct {
	uuid     bool // google.api.field_info.format = UUID4
	required bool // google.api.field_behavior = REQUIRED
}

// keyFieldRules reads the annotations of the key field of msg (for
// AEP-155's {key, first_sent}, of the field and of its key).
func keyFieldRules(msg protoreflect.MessageDescriptor, k keyKind) keyRules {
	var r keyRules
	if k.field == "" {
		return r
	}
	f := msg.Fields().ByName(protoreflect.Name(k.field))
	if f == nil {
		return r
	}
	r = fieldRules(f)
	if k.firstSent && f.Message() != nil {
		if inner := f.Message().Fields().ByName("key"); inner != nil {
			ir := fieldRules(inner)
			r.uuid, r.required = r.uuid || ir.uuid, r.required || ir.required
		}
	}
	return r
}

func fieldRules(f protoreflect.FieldDescriptor) keyRules {
	var r keyRules
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
			r.required = r.required || v == behaviorRequired
			n = m
		case num == fieldBehaviorExt && typ == protowire.BytesType: // packed
			packed, m := protowire.ConsumeBytes(b)
			for len(packed) > 0 {
				v, k := protowire.ConsumeVarint(packed)
				if k < 0 {
					break
				}
				r.required = r.required || v == behaviorRequired
				packed = packed[k:]
			}
			n = m
		case num == fieldInfoExt && typ == protowire.BytesType:
			info, m := protowire.ConsumeBytes(b)
			r.uuid = r.uuid || infoUUID(info)
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

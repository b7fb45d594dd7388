package initconfig

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxMessageDepth bounds how deep the skeleton recurses into nested
// messages (a recursive message would not end).
const maxMessageDepth = 3

// skeleton is a request message in protojson, built from its descriptor:
// each field under its JSON name (lowerCamelCase, as protojson writes
// it), in declaration order.
type skeleton struct {
	node *yaml.Node     // the ordered mapping written in the file
	json map[string]any // the same, to patch and measure
	// leftOut are the fields not written (repeated, maps, oneofs, deeper
	// messages, well-known types without a placeholder), as paths.
	leftOut []string
	// numeric and text are the paths (JSON names) of the first integer
	// and string scalars written: a mutation changes one.
	numeric, text []string
	// repeated are the repeated fields left out, each with one element:
	// a mutation per field adds it (a fingerprint that skips a list is a
	// defect only a changed list shows).
	repeated []repeatedField
}

// repeatedField is a repeated field's path (JSON names) and a placeholder
// element.
type repeatedField struct {
	path []string
	elem any
}

// messageSkeleton writes msg's fields but skip (the key field, which the
// suite sets).
func messageSkeleton(msg protoreflect.MessageDescriptor, skip string) *skeleton {
	s := &skeleton{}
	s.node, s.json = s.message(msg, skip, nil, 0)
	return s
}

func (s *skeleton) message(msg protoreflect.MessageDescriptor, skip string, path []string, depth int) (*yaml.Node, map[string]any) {
	n := newMapping()
	obj := map[string]any{}
	fields := msg.Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		if string(f.Name()) == skip {
			continue
		}
		at := append(append([]string(nil), path...), f.JSONName())
		why := ""
		switch {
		case f.IsMap():
			why = "a map"
		case f.IsList():
			why = "repeated"
		case f.ContainingOneof() != nil && !f.ContainingOneof().IsSynthetic():
			why = "oneof " + string(f.ContainingOneof().Name())
		}
		if why != "" {
			s.leftOut = append(s.leftOut, fmt.Sprintf("%s (%s)", strings.Join(at, "."), why))
			if why == "repeated" {
				s.addRepeated(f, at, depth)
			}
			continue
		}
		v, ok := s.field(f, at, depth)
		if !ok {
			continue
		}
		switch x := v.(type) {
		case *yaml.Node:
			n.set(f.JSONName(), x)
			var m any
			_ = x.Decode(&m)
			obj[f.JSONName()] = m
		default:
			n.set(f.JSONName(), value(x))
			obj[f.JSONName()] = x
		}
	}
	if b, _ := json.Marshal(obj); len(b) <= 100 {
		n.n.Style = yaml.FlowStyle
	}
	return n.n, obj
}

// field is f's placeholder: a value by type, or a nested message's node;
// false when it is left out.
func (s *skeleton) field(f protoreflect.FieldDescriptor, at []string, depth int) (any, bool) {
	switch f.Kind() {
	case protoreflect.StringKind:
		if s.text == nil {
			s.text = at
		}
		return "TODO", true
	case protoreflect.BoolKind:
		return true, true
	case protoreflect.BytesKind:
		return "VE9ETw==", true // "TODO" in base64, as protojson writes bytes
	case protoreflect.EnumKind:
		vals := f.Enum().Values()
		for i := 0; i < vals.Len(); i++ {
			if vals.Get(i).Number() != 0 {
				return string(vals.Get(i).Name()), true
			}
		}
		return string(vals.Get(0).Name()), true
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return 1.5, true
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return s.nested(f, at, depth)
	default: // the integers
		if s.numeric == nil {
			s.numeric = at
		}
		return 1, true
	}
}

// nested is a message field: a well-known type by its protojson form, any
// other message recursed into up to maxMessageDepth.
func (s *skeleton) nested(f protoreflect.FieldDescriptor, at []string, depth int) (any, bool) {
	switch name := f.Message().FullName(); name {
	case "google.protobuf.Timestamp":
		return "2025-01-01T00:00:00Z", true
	case "google.protobuf.Duration":
		return "1s", true
	case "google.protobuf.StringValue":
		return "TODO", true
	case "google.protobuf.BoolValue":
		return true, true
	case "google.protobuf.Int32Value", "google.protobuf.Int64Value", "google.protobuf.UInt32Value", "google.protobuf.UInt64Value":
		return 1, true
	case "google.protobuf.FloatValue", "google.protobuf.DoubleValue":
		return 1.5, true
	default:
		if strings.HasPrefix(string(name), "google.protobuf.") || depth+1 >= maxMessageDepth {
			s.leftOut = append(s.leftOut, fmt.Sprintf("%s (%s)", strings.Join(at, "."), name))
			return nil, false
		}
	}
	n, obj := s.message(f.Message(), "", at, depth+1)
	if len(obj) == 0 {
		return nil, false
	}
	return n, true
}

// addRepeated records f with a placeholder element (a message's in
// protojson), built apart so that the skeleton's own paths stay its.
func (s *skeleton) addRepeated(f protoreflect.FieldDescriptor, at []string, depth int) {
	elem, ok := (&skeleton{}).field(f, at, depth)
	if !ok {
		return
	}
	if n, isNode := elem.(*yaml.Node); isNode {
		var m any
		if n.Decode(&m) != nil {
			return
		}
		elem = m
	}
	s.repeated = append(s.repeated, repeatedField{path: at, elem: elem})
}

// listMutations add one element to each repeated field, named after it.
func (s *skeleton) listMutations() (patches []map[string]any, names []string) {
	for _, r := range s.repeated {
		patch := map[string]any{r.path[len(r.path)-1]: []any{r.elem}}
		for i := len(r.path) - 2; i >= 0; i-- {
			patch = map[string]any{r.path[i]: patch}
		}
		patches, names = append(patches, patch), append(names, r.path[len(r.path)-1])
	}
	return patches, names
}

// mutation is a patch changing one field of the body, the first integer
// (else string) one, and the field's name.
func (s *skeleton) mutation() (patch map[string]any, name string, ok bool) {
	path, v := s.numeric, any(2)
	if path == nil {
		path, v = s.text, changedString("TODO")
	}
	if path == nil {
		return nil, "", false
	}
	patch = map[string]any{path[len(path)-1]: v}
	for i := len(path) - 2; i >= 0; i-- {
		patch = map[string]any{path[i]: patch}
	}
	return patch, path[len(path)-1], true
}

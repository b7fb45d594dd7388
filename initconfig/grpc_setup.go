package initconfig

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// grpcSetup is the setup: init proposes for a method that acts on an
// existing resource: its request names the resource by a <thing>_id field
// and the service has a Create<Thing> to make one per key (AIP-133).
type grpcSetup struct {
	creator protoreflect.MethodDescriptor
	field   protoreflect.FieldDescriptor // the request's <thing>_id
	ref     string                       // {setup.id}: the creator's answer's id
	update  bool                         // m answers the resource it acts on
	why     string
}

// proposeGRPCSetup finds m's creator, or ok false.
func proposeGRPCSetup(m protoreflect.MethodDescriptor) (s grpcSetup, ok bool) {
	if strings.HasPrefix(string(m.Name()), "Create") || readName(string(m.Name())) {
		return s, false
	}
	fields := m.Input().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		thing, isID := strings.CutSuffix(string(f.Name()), "_id")
		if !isID || f.IsList() || f.Kind() != protoreflect.StringKind {
			continue
		}
		creator := m.Parent().(protoreflect.ServiceDescriptor).Methods().ByName(protoreflect.Name("Create" + camel(thing)))
		if creator == nil || creator.IsStreamingClient() || creator.IsStreamingServer() {
			continue
		}
		ptr, why := responseID(creator.Output())
		if ptr == "" {
			continue
		}
		s = grpcSetup{creator: creator, field: f, update: m.Output().FullName() == creator.Output().FullName(),
			ref: "{setup." + strings.ReplaceAll(strings.TrimPrefix(ptr, "/"), "/", ".") + "}",
			why: fmt.Sprintf("%s takes the id of a resource %s creates (%s): each key acts on a fresh one", f.Name(), creator.Name(), why)}
		return s, true
	}
	return s, false
}

// camel is a proto field's snake_case as a message's CamelCase
// (payment -> Payment, line_item -> LineItem).
func camel(s string) string {
	var b strings.Builder
	for p := range strings.SplitSeq(s, "_") {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}

// node is the setup: mapping: the creator's rpc and a request skeleton
// (skip: the key field, which idemcheck fills for the setup's own key).
func (s grpcSetup) node(skip string) *yaml.Node {
	m := flowMapping()
	m.set("rpc", str(string(s.creator.Parent().FullName())+"/"+string(s.creator.Name())))
	body := messageSkeleton(s.creator.Input(), skip)
	if len(body.json) > 0 {
		m.set("body", body.node)
	}
	guessed(m.n, s.why)
	return m.n
}

// bind puts the setup's value where the request names the resource: its
// <thing>_id member of the body skeleton (added when the skeleton left
// it out).
func (s grpcSetup) bind(body *yaml.Node) {
	name := s.field.JSONName()
	for i := 0; i+1 < len(body.Content); i += 2 {
		if body.Content[i].Value == name || body.Content[i].Value == string(s.field.Name()) {
			body.Content[i+1] = str(s.ref)
			return
		}
	}
	body.Content = append(body.Content, str(name), str(s.ref))
}

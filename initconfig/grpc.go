package initconfig

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// GRPCOptions is the gRPC service init --grpc describes.
type GRPCOptions struct {
	URL      string // grpc://host:port or grpcs://host:port
	Protoset string // a descriptor set file read instead of server reflection
	// RPCs are the methods to write (package.Service/Method; empty: those
	// whose request carries a key field, or with KeyMetadata the unary
	// methods not named like reads).
	RPCs []string
	// Metadata are "name: value" entries sent with every call (the
	// credentials become ${IDEMCHECK_TOKEN_n} in the file).
	Metadata []string
	// KeyMetadata is the metadata key carrying the idempotency key, for a
	// service whose messages have no key field.
	KeyMetadata string
	Timeout     time.Duration // reflection's calls (0: 10s)
	TLS         apispec.TLS
	Command     string
}

// ErrNoMethod: the descriptors have no method init can write (exit 2).
var ErrNoMethod = errors.New("no method")

// FromGRPC reads a gRPC service's descriptors (server reflection, or the
// protoset) and writes a commented config for the methods that carry an
// idempotency key: every guess says "guessed:", every gap "TODO:".
func FromGRPC(ctx context.Context, o GRPCOptions) ([]byte, error) {
	t, err := grpcTarget(o)
	if err != nil {
		return nil, err
	}
	meta, err := grpcMetadata(o.Metadata, o.KeyMetadata)
	if err != nil {
		return nil, err
	}
	g := wire.NewGRPC(t)
	defer g.Close()
	if o.Protoset == "" {
		// Reflection asks the server: one that does not answer is
		// unreachable (exit 4), as for every face. A protoset needs no
		// server: nothing is sent.
		if _, err := wire.Preflight(ctx, t, g, nil); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	svcs, err := g.Services(ctx)
	if errors.Is(err, wire.ErrNoReflection) {
		return nil, fmt.Errorf("--grpc %s: the server offers no reflection (grpc.reflection.v1 or v1alpha): give --protoset FILE (protoc --include_imports --descriptor_set_out=FILE)", o.URL)
	}
	if err != nil {
		return nil, fmt.Errorf("--grpc %s: %s", o.URL, singleLine(err.Error()))
	}
	d := describe(svcs, o.KeyMetadata)
	sel, err := d.selectMethods(o.RPCs)
	if err != nil {
		return nil, err
	}
	return d.write(o, t, sel, meta)
}

// grpcTarget is the target reflection reads: the base URL, the TLS flags
// and the protoset.
func grpcTarget(o GRPCOptions) (*apispec.Target, error) {
	u, err := apispec.GRPCServer(o.URL)
	if err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	t := &apispec.Target{BaseURL: u.Scheme + "://" + u.Host, Protoset: o.Protoset, Timeout: timeout}
	if err := t.SetTLS(o.TLS); err != nil {
		return nil, fmt.Errorf("tls.%v", err)
	}
	return t, nil
}

// grpcMetadata reads --metadata's "name: value" entries, names in lower
// case as gRPC sends them.
func grpcMetadata(entries []string, keyMetadata string) (map[string]string, error) {
	md := map[string]string{}
	for _, e := range entries {
		name, v, ok := strings.Cut(e, ":")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("--metadata %q: want \"name: value\"", e)
		}
		if name == strings.ToLower(keyMetadata) {
			return nil, fmt.Errorf("--metadata %q: the key metadata is sent by idemcheck", e)
		}
		md[name] = strings.TrimSpace(v)
	}
	return md, nil
}

// keyKind is where a method's request carries its key.
type keyKind struct {
	field     string // the request message's field ("" : metadata)
	firstSent bool   // AEP-155's {key, first_sent}
	metadata  string
}

func (k keyKind) preset() string {
	switch {
	case k.metadata != "":
		return "grpc-metadata"
	case k.firstSent:
		return "aep-155"
	}
	return "aip-155"
}

// String says what the key is, for comments.
func (k keyKind) String() string {
	switch {
	case k.metadata != "":
		return "the " + k.metadata + " metadata"
	case k.firstSent:
		return "AEP-155's IdempotencyKey {key, first_sent} in the field " + k.field
	}
	return "AIP-155's string " + k.field
}

// method is one unary method and its key (nil: none found).
type method struct {
	md  protoreflect.MethodDescriptor
	key *keyKind
	// guessed says why a method is taken without a key field (a metadata
	// key: its name is not a read's).
	guessed string
}

func (m method) rpc() string {
	return string(m.md.Parent().FullName()) + "/" + string(m.md.Name())
}

// description is what the descriptors show.
type description struct {
	services []protoreflect.ServiceDescriptor
	methods  []method // the unary ones, in service then declaration order
	streams  int      // methods left out: streaming
	metadata string   // --key-metadata
}

func describe(svcs []protoreflect.ServiceDescriptor, keyMetadata string) *description {
	d := &description{services: svcs, metadata: keyMetadata}
	for _, sd := range svcs {
		for i := 0; i < sd.Methods().Len(); i++ {
			md := sd.Methods().Get(i)
			if md.IsStreamingClient() || md.IsStreamingServer() {
				d.streams++
				continue
			}
			m := method{md: md}
			if keyMetadata != "" {
				m.key = &keyKind{metadata: keyMetadata}
				if !readName(string(md.Name())) {
					m.guessed = "a unary method not named Get, List, Watch or Search: it may change state"
				}
			} else {
				m.key = keyField(md.Input())
			}
			d.methods = append(d.methods, m)
		}
	}
	return d
}

// readName: a method named as AIP-131..132's reads are (and watches,
// searches), which takes no key.
func readName(name string) bool {
	for _, p := range []string{"Get", "List", "Watch", "Search"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// keyField is the key a request message carries: AIP-155's string
// request_id, else a field whose message has AEP-155's IdempotencyKey
// shape {string key, google.protobuf.Timestamp first_sent}, whatever
// its name.
func keyField(msg protoreflect.MessageDescriptor) *keyKind {
	fields := msg.Fields()
	if f := fields.ByName("request_id"); f != nil && f.Kind() == protoreflect.StringKind && f.Cardinality() != protoreflect.Repeated {
		return &keyKind{field: "request_id"}
	}
	for i := 0; i < fields.Len(); i++ {
		if f := fields.Get(i); f.Message() != nil && !f.IsList() && !f.IsMap() && idempotencyKeyShape(f.Message()) {
			return &keyKind{field: string(f.Name()), firstSent: true}
		}
	}
	return nil
}

func idempotencyKeyShape(m protoreflect.MessageDescriptor) bool {
	k, fs := m.Fields().ByName("key"), m.Fields().ByName("first_sent")
	return m.Fields().Len() == 2 && k != nil && k.Kind() == protoreflect.StringKind && !k.IsList() &&
		fs != nil && fs.Message() != nil && fs.Message().FullName() == "google.protobuf.Timestamp" && !fs.IsList()
}

// selection is what the config holds: the methods of one key kind, and
// what is left out of it.
type selection struct {
	key     keyKind
	methods []method
	// others are the selected methods of other key kinds, noKey those
	// --rpc named whose request carries no key.
	others, noKey []method
}

// selectMethods picks the methods: those --rpc names, else every one with
// a key (with --key-metadata, the unary ones not named like reads). One
// config holds one key: the most common kind's methods are written.
func (d *description) selectMethods(rpcs []string) (*selection, error) {
	var picked []method
	if len(rpcs) > 0 {
		byRPC := map[string]method{}
		for _, m := range d.methods {
			byRPC[m.rpc()] = m
		}
		for _, r := range rpcs {
			m, ok := byRPC[strings.TrimPrefix(r, "/")]
			if !ok {
				return nil, fmt.Errorf("--rpc %q: no unary method package.Service/Method of that name (%s)", r, d.summary())
			}
			m.guessed = "" // named by --rpc
			picked = append(picked, m)
		}
	} else {
		for _, m := range d.methods {
			if m.key != nil && (d.metadata == "" || m.guessed != "") {
				picked = append(picked, m)
			}
		}
	}
	s := &selection{}
	count := map[keyKind]int{}
	var order []keyKind
	for _, m := range picked {
		if m.key == nil {
			s.noKey = append(s.noKey, m)
			continue
		}
		if count[*m.key] == 0 {
			order = append(order, *m.key)
		}
		count[*m.key]++
	}
	if len(order) == 0 {
		what := "a request message with AIP-155's string request_id or a field of AEP-155's IdempotencyKey shape {string key, google.protobuf.Timestamp first_sent}; --key-metadata NAME for a metadata key"
		if d.metadata != "" {
			what = "a unary method not named Get, List, Watch or Search (--rpc names one)"
		}
		if len(rpcs) > 0 {
			what = "among the --rpc methods, " + what
		}
		return nil, fmt.Errorf("%w: init --grpc found no method with %s (%s)", ErrNoMethod, what, d.summary())
	}
	// The most common kind; on a tie, the first seen.
	sort.SliceStable(order, func(i, j int) bool { return count[order[i]] > count[order[j]] })
	s.key = order[0]
	for _, m := range picked {
		switch {
		case m.key == nil:
		case *m.key == s.key:
			s.methods = append(s.methods, m)
		default:
			s.others = append(s.others, m)
		}
	}
	return s, nil
}

// rules is what the key field's annotations say, where every selected
// method's request says it.
func (s *selection) rules() wire.KeyRules {
	if len(s.methods) == 0 {
		return wire.KeyRules{}
	}
	all := wire.KeyRules{UUID: true, Required: true}
	for _, m := range s.methods {
		r := wire.KeyFieldRules(m.md.Input(), s.key.field, s.key.firstSent)
		all.UUID, all.Required = all.UUID && r.UUID, all.Required && r.Required
	}
	return all
}

// summary says what the descriptors hold, for an error.
func (d *description) summary() string {
	var names []string
	for _, s := range d.services {
		names = append(names, string(s.FullName()))
	}
	svcs := "no service"
	if len(names) > 0 {
		svcs = "services " + strings.Join(names, ", ")
	}
	s := fmt.Sprintf("%d unary methods in %s", len(d.methods), svcs)
	if d.streams > 0 {
		s += fmt.Sprintf("; %d streaming methods left out", d.streams)
	}
	return s
}

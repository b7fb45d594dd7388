package chaos

import (
	"fmt"
	"sort"
	"strings"
)

// Fault is one kind of injected failure. Serve handles one client attempt
// through x: it decides whether and how often to forward, and what (if
// anything) the client gets back.
type Fault interface {
	// Kind is the fault's name in specs, history and response headers.
	Kind() string
	// Serve handles the attempt. It must leave x with an answer or an
	// abort; Relay methods record what happened in the history.
	Serve(x *Relay)
}

// factory builds a fault from its parameters (everything in the spec
// except the selection keys); it must consume or reject each one.
type factory func(p params) (Fault, error)

var kinds = map[string]factory{}

// register adds a fault kind; each fault file calls it from init.
func register(kind string, f factory) { kinds[kind] = f }

// Kinds lists the registered fault kinds, sorted.
func Kinds() []string { return sortedKeys(kinds) }

// grpcFault is a fault's gRPC form: it handles one unary call through x
// and returns what the call ends with (nil after the answer was sent).
type grpcFault interface {
	serveGRPC(x *callExchange) error
}

var grpcKinds = map[string]func(p params) (grpcFault, error){}

// registerGRPC adds the gRPC form of a kind; its fault file calls it from
// init beside register.
func registerGRPC(kind string, f func(p params) (grpcFault, error)) { grpcKinds[kind] = f }

// GRPCKinds lists the fault kinds with a gRPC form, sorted.
func GRPCKinds() []string { return sortedKeys(grpcKinds) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// params are a spec's fault-specific key=value pairs. Each getter removes
// the key, so leftovers are unknown keys and rejected by name.
type params map[string]string

func (p params) take(key string) (string, bool) {
	v, ok := p[key]
	delete(p, key)
	return v, ok
}

// mode takes key and checks it is one of allowed (the first is the default).
func (p params) mode(key string, allowed ...string) (string, error) {
	v, ok := p.take(key)
	if !ok {
		return allowed[0], nil
	}
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", fmt.Errorf("token %q: want one of %s", key+"="+v, strings.Join(allowed, ", "))
}

// leftover is the error for keys no getter took.
func (p params) leftover(kind string) error {
	if len(p) == 0 {
		return nil
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return fmt.Errorf("unknown parameter %q for %s", keys[0], kind)
}

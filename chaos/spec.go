package chaos

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Rule is one active fault: which attempts it selects and what it does.
// Its textual form is the spec, e.g. "drop-response:p=0.3,mode=rst".
type Rule struct {
	ID     string    `json:"id"`
	Spec   string    `json:"spec"`
	Kind   string    `json:"kind"`
	Select Select    `json:"select"`
	fault  Fault     // the HTTP form (ParseRule)
	call   grpcFault // the gRPC form (ParseGRPCRule)
}

// Select says which attempts a rule applies to. All set conditions must
// hold; then the rule fires with probability P.
type Select struct {
	P       float64 `json:"p"`
	Attempt int     `json:"attempt,omitempty"` // Nth attempt of a key (1-based); 0 = any
	Method  string  `json:"method,omitempty"`
	Path    string  `json:"path,omitempty"` // exact, or a prefix when it ends in '*'
	Header  string  `json:"header,omitempty"`
	Value   string  `json:"value,omitempty"` // with Header: required exact value
}

// matches reports whether the attempt meets the rule's conditions (the
// probability is drawn by the caller, so the RNG sequence stays seeded).
func (s Select) matches(r *http.Request, attempt int) bool {
	if s.Attempt != 0 && s.Attempt != attempt {
		return false
	}
	if s.Method != "" && !strings.EqualFold(s.Method, r.Method) {
		return false
	}
	if s.Path != "" && !pathMatches(s.Path, r.URL.Path) {
		return false
	}
	if s.Header != "" && r.Header.Get(s.Header) != s.Value {
		return false
	}
	return true
}

// pathMatches: path is pattern, or starts with it when it ends in '*'.
func pathMatches(pattern, path string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(path, prefix)
	}
	return path == pattern
}

// ParseRule parses a fault spec:
//
//	kind[:P | :key=value,key=value...]
//
// Selection keys: p (probability 0..1), attempt (Nth attempt of a key),
// method, path (exact, or prefix with a trailing *), header (Name:value).
// Other keys belong to the fault kind (e.g. mode=rst). Errors name the bad
// token.
func ParseRule(spec string) (*Rule, error) { return parseRule(spec, false) }

// ParseGRPCRule parses a fault spec for a gRPC proxy (GRPCProxy): the
// same grammar, the kinds with a gRPC form (GRPCKinds) and their gRPC
// parameters; a kind without one is refused by name.
func ParseGRPCRule(spec string) (*Rule, error) { return parseRule(spec, true) }

// ParseGRPCRules parses fault specs once for gRPC proxies.
func ParseGRPCRules(specs []string) ([]Rule, error) {
	out := make([]Rule, 0, len(specs))
	for _, s := range specs {
		r, err := ParseGRPCRule(s)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}

func parseRule(spec string, grpc bool) (*Rule, error) {
	spec = strings.TrimSpace(spec)
	kind, rest, _ := strings.Cut(spec, ":")
	mk, ok := kinds[kind]
	if !ok {
		return nil, fmt.Errorf("fault %q: unknown kind (want one of %s)", kind, strings.Join(Kinds(), ", "))
	}
	mkCall, callOK := grpcKinds[kind]
	if grpc && !callOK {
		return nil, fmt.Errorf("fault %q: %s has no gRPC form yet (docs/grpc.md); over gRPC: %s", spec, kind, strings.Join(GRPCKinds(), ", "))
	}
	p := params{}
	sel := Select{P: -1}
	if rest != "" {
		if f, err := strconv.ParseFloat(rest, 64); err == nil {
			sel.P = f
		} else {
			for _, tok := range strings.Split(rest, ",") {
				k, v, found := strings.Cut(tok, "=")
				if !found || k == "" || v == "" {
					return nil, fmt.Errorf("fault %q: token %q: want key=value", spec, tok)
				}
				if _, dup := p[k]; dup {
					return nil, fmt.Errorf("fault %q: token %q: %q given twice", spec, tok, k)
				}
				p[k] = v
			}
		}
	}
	if err := sel.take(p); err != nil {
		return nil, fmt.Errorf("fault %q: %w", spec, err)
	}
	r := &Rule{Spec: spec, Kind: kind, Select: sel}
	var err error
	if grpc {
		r.call, err = mkCall(p)
	} else {
		r.fault, err = mk(p)
	}
	if err == nil {
		err = p.leftover(kind)
	}
	if err != nil {
		return nil, fmt.Errorf("fault %q: %w", spec, err)
	}
	return r, nil
}

// ParseRules parses fault specs once, for any number of proxies (Add).
func ParseRules(specs []string) ([]Rule, error) {
	out := make([]Rule, 0, len(specs))
	for _, s := range specs {
		r, err := ParseRule(s)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}

// take moves the selection keys out of p. sel.P is -1 when the shorthand
// did not set it.
func (s *Select) take(p params) error {
	if v, ok := p.take("p"); ok {
		if s.P >= 0 {
			return errors.New("token \"p\": probability given twice")
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("token %q: not a number", "p="+v)
		}
		s.P = f
	}
	if s.P == -1 {
		s.P = 1
	}
	if !(s.P >= 0 && s.P <= 1) { // NaN fails both comparisons
		return fmt.Errorf("probability %v: want 0..1", s.P)
	}
	if v, ok := p.take("attempt"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("token %q: want an integer >= 1", "attempt="+v)
		}
		s.Attempt = n
	}
	if v, ok := p.take("method"); ok {
		s.Method = strings.ToUpper(v)
	}
	if v, ok := p.take("path"); ok {
		if !strings.HasPrefix(v, "/") {
			return fmt.Errorf("token %q: want an absolute path", "path="+v)
		}
		s.Path = v
	}
	if v, ok := p.take("header"); ok {
		name, value, found := strings.Cut(v, ":")
		if !found || name == "" {
			return fmt.Errorf("token %q: want Name:value", "header="+v)
		}
		s.Header, s.Value = http.CanonicalHeaderKey(name), value
	}
	return nil
}

// duration takes key as a Go duration (e.g. 200ms); def when absent.
func (p params) duration(key string, def time.Duration) (time.Duration, error) {
	v, ok := p.take(key)
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > time.Hour {
		return 0, fmt.Errorf("token %q: want a duration such as 200ms (0..1h)", key+"="+v)
	}
	return d, nil
}

// intValue takes key as a non-negative integer; def when absent.
func (p params) intValue(key string, def int) (int, error) {
	v, ok := p.take(key)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("token %q: want an integer >= 0", key+"="+v)
	}
	return n, nil
}

package apispec

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/evidence/double"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// The downstream double in a run: idemcheck starts it where the API under
// test sends a dependency's calls (Target.Downstream), writes a token
// unique to each key into the key's requests (Operation.Marker, through
// Target.Mark), counts a key's executions as the calls of a route that
// hold its token (Oracle.Downstream) and makes a variant's calls slow or
// failing by the key's token (Variant.Downstream). The events source reads
// the tokens too: an event that carries a key's token is that key's, with
// or without a double.

// Marker is where a key's token goes in each of its requests: a JSON
// pointer into the body ("marker: /reference"), a header
// ("{header: X-Ref}") or a query parameter ("{query: ref}"). Without a
// marker the key itself is the token (an API that forwards the client's
// key to its provider).
type Marker struct {
	Pointer string `yaml:"pointer" json:"pointer,omitempty"`
	Header  string `yaml:"header" json:"header,omitempty"`
	Query   string `yaml:"query" json:"query,omitempty"`
}

// UnmarshalYAML reads a pointer ("/reference") or a mapping.
func (m *Marker) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*m = Marker{Pointer: n.Value}
		return nil
	}
	type plain Marker
	return n.Decode((*plain)(m))
}

// String is the marker as the config writes it.
func (m *Marker) String() string {
	switch {
	case m.Header != "":
		return "header " + m.Header
	case m.Query != "":
		return "query parameter " + m.Query
	}
	return "body " + m.Pointer
}

// VariantDownstream is how the double answers the calls of a key sent
// with the variant: the route named, the behaviour for the key's token.
type VariantDownstream struct {
	Route string `yaml:"route" json:"route"`
	double.Behaviour
}

// validateDownstream checks the downstream parts of t: the double's
// config, the oracles' and variants' routes and the markers.
func (t *Target) validateDownstream() error {
	d := t.Downstream
	if d != nil {
		if err := d.Validate(); err != nil {
			return err
		}
	}
	if strings.Contains(t.Command, DownstreamPlaceholder) && d == nil {
		return fmt.Errorf("target_cmd %q: %s is the downstream double's URL; add a downstream: section", t.Command, DownstreamPlaceholder)
	}
	route := func(at, name string) error {
		if d == nil {
			return fmt.Errorf("%s %q: no downstream: section declares the double's routes", at, name)
		}
		if d.RouteIndex(name) < 0 {
			return fmt.Errorf("%s %q: no such route in downstream.routes (%s)", at, name, d.RouteNames())
		}
		return nil
	}
	if o := t.Oracle; o != nil && o.Downstream != "" {
		if err := route("oracle.downstream", o.Downstream); err != nil {
			return err
		}
	}
	for i, op := range t.Operations {
		at := fmt.Sprintf("operations[%d]", i)
		if o := op.Oracle; o != nil && o.Downstream != "" {
			if err := route(at+".oracle.downstream", o.Downstream); err != nil {
				return err
			}
		}
		for _, name := range slices.Sorted(maps.Keys(op.Variants)) {
			v := op.Variants[name]
			if v.Downstream == nil {
				continue
			}
			vat := at + ".variants." + name + ".downstream"
			if err := route(vat+".route", v.Downstream.Route); err != nil {
				return err
			}
			b := v.Downstream.Behaviour
			if b.Status != 0 && (b.Status < 100 || b.Status > 599) {
				return fmt.Errorf("%s.status %d: not an HTTP status", vat, b.Status)
			}
			if b.Delay < 0 {
				return fmt.Errorf("%s.delay %s: must not be negative", vat, b.Delay)
			}
			if name == VariantSlow && b.Delay < v.Duration && !b.Hang {
				return fmt.Errorf("%s.delay %s: shorter than the variant's duration %s (the call stays in flight as long as the provider holds it)", vat, b.Delay, v.Duration)
			}
		}
		if err := op.validateMarker(at, d != nil || t.Events != nil); err != nil {
			return err
		}
	}
	return nil
}

// validateMarker checks op's marker; used says whether something reads
// the tokens (the downstream double, or the events source).
func (op *Operation) validateMarker(at string, used bool) error {
	m := op.Marker
	if m == nil {
		return nil
	}
	at += ".marker"
	set := 0
	for _, s := range []string{m.Pointer, m.Header, m.Query} {
		if s != "" {
			set++
		}
	}
	switch {
	case set != 1:
		return fmt.Errorf("%s: want one of a body pointer (/reference), {header: NAME} or {query: NAME}", at)
	case !used:
		return fmt.Errorf("%s: a marker is for the downstream double or the events source; add a downstream: or an events: section", at)
	case m.Header != "" && strings.ContainsAny(m.Header, " \t:\"(),/;<=>?@[\\]{}"):
		return fmt.Errorf("%s.header %q: want an HTTP header name", at, m.Header)
	case m.Query != "" && strings.ContainsAny(m.Query, "&=#? "):
		return fmt.Errorf("%s.query %q: want a query parameter name", at, m.Query)
	case m.Pointer != "":
		if _, err := jsonx.ParsePointer(m.Pointer); err != nil {
			return fmt.Errorf("%s %q: %v", at, m.Pointer, err)
		}
		if _, ok := jsonx.Replace(op.Body, m.Pointer, []byte(`""`)); !ok {
			return fmt.Errorf("%s %q: nothing at this pointer in the operation's body (give the member a placeholder, e.g. reference: \"\")", at, m.Pointer)
		}
	}
	return nil
}

// Downstream reads the file's downstream: section (the rest of the file is
// not read), for a double started on its own (idemcheck double). Errors are
// one line naming the file and the field.
func (f *File) Downstream() (*double.Config, error) {
	raw, path := f.Raw, f.Path
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("config %s: %v", path, yamlError(err))
	}
	n, ok := doc["downstream"]
	if !ok {
		return nil, fmt.Errorf("config %s: downstream: no such section (it declares the double's listen address and routes)", path)
	}
	// Re-encoded to decode it strictly: a misspelt field is an error.
	section, err := yaml.Marshal(&n)
	if err != nil {
		return nil, fmt.Errorf("config %s: downstream: %v", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(section))
	dec.KnownFields(true)
	var cfg double.Config
	if err := dec.Decode(&cfg); err != nil {
		// Line numbers of the re-encoded section would mislead: drop them.
		msg := yamlError(err).Error()
		if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "line ") && i > 0 {
			msg = msg[i+2:]
		}
		return nil, fmt.Errorf("config %s: downstream: %s", path, msg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config %s: %v", path, err)
	}
	return &cfg, nil
}

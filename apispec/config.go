package apispec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/evidence/double"
	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// configFile mirrors Target for YAML: bodies and patches are YAML maps
// that become JSON, and the profile is a preset plus overrides.
type configFile struct {
	BaseURL    string            `yaml:"base_url"`
	KeyHeader  string            `yaml:"key_header"`
	KeySyntax  KeySyntax         `yaml:"key_syntax"`
	Timeout    time.Duration     `yaml:"timeout"`
	Principals []Principal       `yaml:"principals"`
	Operations []operationConfig `yaml:"operations"`
	Oracle     *Oracle           `yaml:"oracle"`
	TTL        ttlConfig         `yaml:"ttl"`
	Lease      time.Duration     `yaml:"lease"`
	TargetCmd  string            `yaml:"target_cmd"`
	Replicas   []string          `yaml:"replicas"`
	Profile    profileConfig     `yaml:"profile"`
	// Reach: TLS, secret headers, server-issued keys (request.go, secrets.go, keys.go).
	TLS           TLS              `yaml:"tls"`
	HTTP2         bool             `yaml:"http2"`
	SecretHeaders []string         `yaml:"secret_headers"`
	KeySource     *keySourceConfig `yaml:"key_source"`
	TTLFrom       *keySourceConfig `yaml:"ttl_from"`
	// Downstream: the double idemcheck starts for the API's dependency
	// (downstream.go).
	Downstream *double.Config `yaml:"downstream"`
	// Key and Protoset: a gRPC target's key place and descriptors (grpc.go).
	Key      *KeyPlace `yaml:"key"`
	Protoset string    `yaml:"protoset"`
	// Events: the broker the API publishes its events to (evidence/events).
	Events *eventspec.Config `yaml:"events"`
	// Carrier and Answers: a key in the body, GraphQL, JSON-RPC, MCP
	// (carrier.go).
	Carrier string   `yaml:"carrier"`
	Answers *Answers `yaml:"answers"`
}

type keySourceConfig struct {
	Method    string `yaml:"method"`
	Path      string `yaml:"path"`
	Body      any    `yaml:"body"`
	Pointer   string `yaml:"pointer"`
	Principal int    `yaml:"principal"`
}

// source is c as a KeySource (field names where its errors come from),
// its method method unless given.
func (c *keySourceConfig) source(field, method string) (*KeySource, error) {
	s := &KeySource{Method: strings.ToUpper(c.Method), Path: c.Path, Pointer: c.Pointer, Principal: c.Principal}
	if s.Method == "" {
		s.Method = method
	}
	b, err := jsonx.Encode(c.Body)
	if err != nil {
		return nil, fmt.Errorf("%s.body: %v", field, err)
	}
	s.Body = b
	return s, nil
}

type operationConfig struct {
	Name      string                   `yaml:"name"`
	Method    string                   `yaml:"method"`
	Path      string                   `yaml:"path"`
	RPC       string                   `yaml:"rpc"`
	Headers   map[string]string        `yaml:"headers"`
	Body      any                      `yaml:"body"`
	IDPointer string                   `yaml:"id_pointer"`
	Kind      string                   `yaml:"kind"`
	Version   string                   `yaml:"version_pointer"`
	Setup     *setupConfig             `yaml:"setup"`
	Mutations []mutationConfig         `yaml:"mutations"`
	Variants  map[string]variantConfig `yaml:"variants"`
	Oracle    *Oracle                  `yaml:"oracle"`
	Marker    *Marker                  `yaml:"marker"`
	Response  *responseConfig          `yaml:"response"`
	// The body carriers' words (carrier.go).
	Query         string `yaml:"query"`
	OperationName string `yaml:"operation_name"`
	Call          string `yaml:"call"`
	Tool          string `yaml:"tool"`
}

type mutationConfig struct {
	Name    string            `yaml:"name"`
	Patch   any               `yaml:"patch"`
	Query   map[string]string `yaml:"query"`
	Headers map[string]string `yaml:"headers"`
}

type variantConfig struct {
	Patch any `yaml:"patch"`
	// Raw is the variant's whole body, sent as is (e.g. a malformed JSON
	// payload for "invalid"), instead of a merge patch on the body.
	Raw        *string                  `yaml:"raw"`
	Duration   time.Duration            `yaml:"duration"`
	Status     Status                   `yaml:"status"`
	Downstream *variantDownstreamConfig `yaml:"downstream"`
}

// variantDownstreamConfig is a variant's downstream: the double's answer
// to the key's calls of a route.
type variantDownstreamConfig struct {
	Route   string            `yaml:"route"`
	Delay   time.Duration     `yaml:"delay"`
	Status  int               `yaml:"status"`
	Headers map[string]string `yaml:"headers"`
	Body    any               `yaml:"body"`
	Hang    bool              `yaml:"hang"`
}

// ttlConfig is the ttl field: a duration, or "never" for an API that
// never expires its keys.
type ttlConfig struct {
	d     time.Duration
	never bool
}

// UnmarshalYAML accepts a Go duration (2s, 24h) or "never".
func (c *ttlConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && strings.EqualFold(strings.TrimSpace(n.Value), "never") {
		c.never = true
		return nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if n.Kind != yaml.ScalarNode || err != nil {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 2s, 24h) or never", n.Line, n.Value)
	}
	c.d = d
	return nil
}

type profileConfig struct {
	Preset    string    `yaml:"preset"`
	Overrides yaml.Node `yaml:"overrides"`
}

// knownVariants are the variant names the catalog understands.
var knownVariants = map[string]bool{
	VariantSlow: true, VariantBusinessError: true, VariantTransientError: true, VariantInvalid: true,
	VariantLarge: true, VariantBinary: true, VariantCrash: true, VariantTimeout: true,
}

// LoadConfig reads a YAML config: the target plus its profile. Every error
// is one line naming the file and the field.
func LoadConfig(path string) (*Target, *Profile, error) {
	return LoadConfigPreset(path, "")
}

// LoadConfigPreset is LoadConfig with preset (when not empty) replacing the
// config's profile.preset (--profile); the config's profile.overrides still
// apply on top of it: they describe the API, whatever preset judges it.
func LoadConfigPreset(path, preset string) (*Target, *Profile, error) {
	f, err := ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return f.Load(preset, "")
}

// File is a config file as read: every face loads it, cites it (Redacted)
// or starts its double (Downstream) through it, so the file is read and its
// errors are worded in one place.
type File struct {
	Path string
	Raw  []byte
	// Command stands in for a target_cmd the file leaves out
	// (--target-cmd): validation then knows the harness starts the API,
	// so base_url may name the picked {port}.
	Command string
}

// ReadFile reads the config file at path; the error is one line.
func ReadFile(path string) (*File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	return &File{Path: path, Raw: raw}, nil
}

// Load parses the file (see LoadConfigPreset), base standing in for a
// base_url the file leaves out (--base-url; idemchecktest.Handler's own
// server); errors name the file and the field.
func (f *File) Load(preset, base string) (*Target, *Profile, error) {
	t, p, err := parseConfig(f.Raw, preset, base, f.Command)
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %v", f.Path, err)
	}
	return t, p, nil
}

// Redacted is the file with every secret header value replaced
// (RedactedConfig): what reports cite and attestations digest.
func (f *File) Redacted() ([]byte, error) {
	red, err := RedactedConfig(f.Raw)
	if err != nil {
		return nil, fmt.Errorf("config %s: %v", f.Path, err)
	}
	return red, nil
}

// ParseConfig is LoadConfig on bytes.
func ParseConfig(raw []byte) (*Target, *Profile, error) { return parseConfig(raw, "", "", "") }

func parseConfig(raw []byte, preset, base, command string) (*Target, *Profile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var cf configFile
	if err := dec.Decode(&cf); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, errors.New("empty config")
		}
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			err = atFirstBadLine(raw, err)
		}
		return nil, nil, withField(raw, yamlError(err))
	}
	field := "profile.preset"
	if preset != "" {
		cf.Profile.Preset, field = preset, "--profile"
	}
	p, err := ProfileByName(cf.Profile.Preset)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", field, err)
	}
	if err := applyOverrides(p, &cf.Profile.Overrides); err != nil {
		return nil, nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	if cf.BaseURL == "" {
		cf.BaseURL = base
	}
	if command != "" {
		cf.TargetCmd = command
	}
	t, err := cf.target()
	if err != nil {
		return nil, nil, err
	}
	if t.KeySyntax == "" {
		t.KeySyntax = p.KeySyntax
		if t.KeyInBody() { // a JSON or GraphQL string holds the bare key
			t.KeySyntax = Raw
		}
	}
	if t.Answers == nil && t.ReadsAnswers() {
		t.Answers = presetAnswers(p.Name)
	}
	if err := t.Validate(); err != nil {
		return nil, nil, err
	}
	if !t.IsGRPC() {
		if p.ReplayBinary {
			return nil, nil, fmt.Errorf("profile replay_binary: compares a gRPC answer's binary encoding; an HTTP body's bytes are compared by replay_compare: bytes")
		}
		p.HTTPStatuses()
	}
	if t.Answers != nil {
		t.Answers.resolve(p)
	}
	return t, p, nil
}

// applyOverrides sets the profile fields named in n (a YAML mapping).
func applyOverrides(p *Profile, n *yaml.Node) error {
	if n.Kind == 0 {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: profile.overrides: want a mapping of profile fields", n.Line)
	}
	known := map[string]bool{}
	rt := reflect.TypeOf(*p)
	for i := 0; i < rt.NumField(); i++ {
		if tag := strings.Split(rt.Field(i).Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
			known[tag] = true
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !known[k.Value] {
			return fmt.Errorf("line %d: profile.overrides: unknown field %q", k.Line, k.Value)
		}
	}
	if err := n.Decode(p); err != nil {
		return fmt.Errorf("profile.overrides: %v", yamlError(err))
	}
	p.overridden = map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		p.overridden[n.Content[i].Value] = true
	}
	return nil
}

func (cf *configFile) target() (*Target, error) {
	t := &Target{
		BaseURL: strings.TrimRight(cf.BaseURL, "/"), KeyHeader: cf.KeyHeader, KeySyntax: cf.KeySyntax,
		Timeout: cf.Timeout, Principals: cf.Principals, Oracle: cf.Oracle, TTL: cf.TTL.d, NeverExpires: cf.TTL.never,
		Lease: cf.Lease, Command: cf.TargetCmd, Downstream: cf.Downstream, HTTP2: cf.HTTP2, Events: cf.Events,
		Key: cf.Key, Protoset: cf.Protoset, Carrier: cf.Carrier, Answers: cf.Answers,
	}
	if err := cf.grpcTarget(t); err != nil {
		return nil, err
	}
	for _, r := range cf.Replicas {
		t.Replicas = append(t.Replicas, strings.TrimRight(r, "/"))
	}
	if t.BaseURL == "" && len(t.Replicas) > 0 {
		t.BaseURL = t.Replicas[0]
	}
	if t.KeyHeader == "" {
		t.KeyHeader = DefaultKeyHeader
	}
	if t.Timeout == 0 {
		t.Timeout = DefaultTimeout
	}
	for i, oc := range cf.Operations {
		at := fmt.Sprintf("operations[%d]", i)
		op := Operation{Name: oc.Name, Method: strings.ToUpper(oc.Method), Path: oc.Path, RPC: oc.RPC, Headers: oc.Headers, IDPointer: oc.IDPointer, Oracle: oc.Oracle, Marker: oc.Marker,
			Kind: strings.ToLower(oc.Kind), VersionPointer: oc.Version}
		setup, err := setupOf(at, oc.Setup)
		if err != nil {
			return nil, err
		}
		op.Setup = setup
		if op.Response, err = oc.Response.response(at); err != nil {
			return nil, err
		}
		if oc.RPC != "" {
			if oc.Method != "" || oc.Path != "" {
				return nil, fmt.Errorf("%s.rpc: a gRPC operation has no method or path (rpc: package.Service/Method is both)", at)
			}
			op.Method, op.Path = http.MethodPost, "/"+oc.RPC
		}
		if err := carrierOperation(t, oc, &op, at); err != nil {
			return nil, err
		}
		if oc.Body != nil {
			b, err := jsonx.Encode(oc.Body)
			if err != nil {
				return nil, fmt.Errorf("%s.body: %v", at, err)
			}
			op.Body = b
		}
		for j, mc := range oc.Mutations {
			b, err := jsonx.Encode(mc.Patch)
			if err != nil {
				return nil, fmt.Errorf("%s.mutations[%d].patch: %v", at, j, err)
			}
			op.Mutations = append(op.Mutations, Mutation{Name: mc.Name, Patch: b, Query: mc.Query, Headers: mc.Headers})
		}
		if len(oc.Variants) > 0 {
			op.Variants = map[string]Variant{}
		}
		for name, vc := range oc.Variants {
			v := Variant{Duration: vc.Duration, Status: int(vc.Status)}
			if !t.IsGRPC() {
				v.Status = HTTPStatusOf(v.Status) // an HTTP answer has no gRPC code
			}
			switch {
			case vc.Raw != nil && vc.Patch != nil:
				return nil, fmt.Errorf("%s.variants.%s: give either patch or raw, not both", at, name)
			case vc.Raw != nil:
				v.Raw = []byte(*vc.Raw)
			case vc.Patch == nil:
				// The double makes the call behave, or the API needs no
				// knob (a duration alone: it is slow as it is): the body
				// stays.
			default:
				b, err := jsonx.Encode(vc.Patch)
				if err != nil {
					return nil, fmt.Errorf("%s.variants.%s.patch: %v", at, name, err)
				}
				v.Patch = b
			}
			if dc := vc.Downstream; dc != nil {
				b, err := jsonx.Encode(dc.Body)
				if err != nil {
					return nil, fmt.Errorf("%s.variants.%s.downstream.body: %v", at, name, err)
				}
				v.Downstream = &VariantDownstream{Route: dc.Route, Behaviour: double.Behaviour{
					Delay: dc.Delay, Status: dc.Status, Headers: dc.Headers, Body: b, Hang: dc.Hang}}
			}
			op.Variants[name] = v
		}
		t.Operations = append(t.Operations, op)
	}
	var err error
	if ks := cf.KeySource; ks != nil {
		if t.KeySource, err = ks.source("key_source", http.MethodPost); err != nil {
			return nil, err
		}
	}
	if ks := cf.TTLFrom; ks != nil {
		if cf.TTL != (ttlConfig{}) {
			return nil, errors.New("ttl_from: the lifetime is read from the API, so ttl must not be declared too")
		}
		if t.TTLFrom, err = ks.source("ttl_from", http.MethodGet); err != nil {
			return nil, err
		}
	}
	if err := t.expandConfig(cf.SecretHeaders); err != nil {
		return nil, err
	}
	if err := t.SetTLS(cf.TLS); err != nil {
		return nil, fmt.Errorf("tls.%v", err)
	}
	return t, nil
}

// VariantBody returns the body of op's variant name: its raw body when it
// declares one, else the operation's body with its merge patch applied.
func (op *Operation) VariantBody(name string) (json.RawMessage, Variant, bool) {
	v, ok := op.Variants[name]
	if !ok {
		return nil, Variant{}, false
	}
	if v.Raw != nil {
		return v.Raw, v, true
	}
	if v.Patch == nil { // the double makes it behave, or a duration alone describes it
		return op.Body, v, true
	}
	b, err := jsonx.MergePatch(op.Body, v.Patch)
	if err != nil { // config validation guarantees objects; keep the body
		return op.Body, v, true
	}
	return b, v, true
}

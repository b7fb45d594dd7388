package apispec

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/evidence/double"
	"github.com/idemcheck/idemcheck/evidence/eventspec"
)

// KeySyntax is how the key is written in its header.
type KeySyntax string

const (
	// SFString writes the key as an RFC 9651 sf-string ("abc"), as the
	// draft requires.
	SFString KeySyntax = "sf-string"
	// Raw writes the bare key (abc), as Stripe and most vendors document.
	Raw KeySyntax = "raw"
)

// Target is what the suite, the chaos harness and the load runner talk to.
// It is loaded from YAML (LoadConfig) or derived from a URL that serves the
// reference app's contract (FromURL).
type Target struct {
	BaseURL    string        `yaml:"base_url" json:"base_url"`
	KeyHeader  string        `yaml:"key_header" json:"key_header"`
	KeySyntax  KeySyntax     `yaml:"key_syntax" json:"key_syntax"`
	Timeout    time.Duration `yaml:"timeout" json:"timeout"` // per HTTP exchange
	Principals []Principal   `yaml:"principals" json:"principals"`
	Operations []Operation   `yaml:"operations" json:"operations"`
	Oracle     *Oracle       `yaml:"oracle,omitempty" json:"oracle,omitempty"`
	// TTL and Lease are what the deployment under test declares; zero
	// means "not declared" and the cases that need them skip.
	TTL   time.Duration `yaml:"ttl" json:"ttl"`
	Lease time.Duration `yaml:"lease" json:"lease"`
	// NeverExpires: the API declares that keys never expire ("ttl: never");
	// TTL is then zero and the expiry cases record it instead of testing.
	NeverExpires bool `yaml:"-" json:"never_expires,omitempty"`
	// Command, when set, is a command line (split like a shell, no shell
	// run) the harness starts as the target, with {port} replaced by a free
	// loopback port; BaseURL then defaults to http://127.0.0.1:{port}. The
	// LEASE crash case kills and restarts it (internal/managed starts it).
	Command string `yaml:"target_cmd" json:"target_cmd,omitempty"`
	// Replicas are the base URLs of several replicas of this one API (one
	// store behind them): the replicas/ family spreads a key over them and
	// chaos balances over them. BaseURL defaults to the first.
	Replicas []string `yaml:"replicas" json:"replicas,omitempty"`
	// TLS configures https targets (CA bundle, client certificate).
	TLS TLS `yaml:"tls" json:"tls,omitempty"`
	// HTTP2 speaks HTTP/2 only: h2 by ALPN over TLS, h2c with prior
	// knowledge over plain TCP (http2:, --http2).
	HTTP2 bool `yaml:"http2" json:"http2,omitempty"`
	// KeySource, when set, names a request that issues a fresh key: every
	// key of run, load and chaos is fetched from it (keys.go).
	KeySource *KeySource `yaml:"key_source,omitempty" json:"key_source,omitempty"`
	// TTLFrom, when set, names a request whose answer advertises the
	// keys' lifetime at its pointer (Iceberg's idempotency-key-lifetime in
	// its config endpoint, AdCP's capabilities): an ISO 8601 duration
	// (PT1H), a Go duration (24h) or a number of seconds. Every face reads
	// it before its first request (wire.Preflight) and takes it as TTL.
	TTLFrom *KeySource `yaml:"ttl_from,omitempty" json:"ttl_from,omitempty"`
	// KeyGen, when set, makes the client-generated keys instead of each
	// face's default (HashKeys for --hash-keys); KeySeed is its seed, for
	// reports.
	KeyGen  KeyGen `yaml:"-" json:"-"`
	KeySeed string `yaml:"-" json:"key_seed,omitempty"`
	// Downstream, when set, is the double idemcheck starts where the API
	// sends a dependency's calls (downstream.go).
	Downstream *double.Config `yaml:"downstream,omitempty" json:"downstream,omitempty"`
	// Key is where a gRPC target's key goes (grpc.go); nil for HTTP
	// targets, whose key is KeyHeader.
	Key *KeyPlace `yaml:"key,omitempty" json:"key,omitempty"`
	// Protoset names a descriptor set file (protoc --include_imports
	// --descriptor_set_out) describing a gRPC target's methods; empty:
	// they are read by server reflection.
	Protoset string `yaml:"protoset,omitempty" json:"protoset,omitempty"`
	// Events, when set, reads the events the API publishes per key from
	// its broker (evidence/events): the run's oracle when no oracle is
	// configured, else a second source the outbox cases compare with it.
	Events *eventspec.Config `yaml:"events,omitempty" json:"events,omitempty"`
	// Carrier is how an HTTP target's requests carry the key and how its
	// answers are read (carrier.go): "" or header, json-body, graphql,
	// jsonrpc, mcp. Answers reads GraphQL, JSON-RPC and MCP answers.
	Carrier string   `yaml:"carrier,omitempty" json:"carrier,omitempty"`
	Answers *Answers `yaml:"answers,omitempty" json:"answers,omitempty"`

	tls *tls.Config // built from TLS by SetTLS
	// secrets are (value, placeholder) pairs Redact replaces, longest
	// value first (secrets.go).
	secrets  [][2]string
	redactor *strings.Replacer
	// firstSent remembers when each key was first sent (FirstSent).
	firstSent *keyTimes
}

// Principal is one user of the API: the headers that authenticate it.
type Principal struct {
	Name    string            `yaml:"name" json:"name"`
	Headers map[string]string `yaml:"headers" json:"headers"`
	// Metadata is a gRPC target's word for Headers: the config's
	// metadata: entries become Headers, sent as metadata.
	Metadata map[string]string `yaml:"metadata" json:"-"`
}

// Operation is one key-accepting endpoint.
type Operation struct {
	Name   string `yaml:"name" json:"name"`
	Method string `yaml:"method" json:"method"`
	Path   string `yaml:"path" json:"path"`
	// RPC is a gRPC operation's method, package.Service/Method; Method is
	// then POST and Path /package.Service/Method, as on the HTTP/2 wire.
	RPC     string            `yaml:"rpc,omitempty" json:"rpc,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Body is the JSON request body of a normal, successful call.
	Body json.RawMessage `yaml:"-" json:"body"`
	// IDPointer is the RFC 6901 pointer to the created resource's id in a
	// success response (e.g. /id). Empty: identity oracle unavailable.
	IDPointer string `yaml:"id_pointer" json:"id_pointer"`
	// Response is the success answer idemcheck client's stand-in gives
	// (response.go); nil: it echoes the request.
	Response *Response `yaml:"-" json:"response,omitempty"`
	// Kind is what the operation does to resources: create (the default)
	// or update (operation_kind.go). VersionPointer is an update's
	// revision member, which every execution changes (/version).
	Kind           string `yaml:"kind,omitempty" json:"kind,omitempty"`
	VersionPointer string `yaml:"version_pointer,omitempty" json:"version_pointer,omitempty"`
	// Setup, when set, makes a fresh resource for each key before its
	// first request (operation_kind.go).
	Setup *Setup `yaml:"-" json:"setup,omitempty"`
	// Mutations are materially different requests: each changes the body
	// (a JSON merge patch, RFC 7386, applied to Body), the query or the
	// header fields, or several of them.
	Mutations []Mutation `yaml:"mutations" json:"mutations"`
	// Variants are JSON merge patches that make the call behave a given
	// way: "slow", "business_error", "transient_error", "invalid".
	Variants map[string]Variant `yaml:"variants" json:"variants"`
	// Oracle, when set, counts this operation's executions instead of the
	// target's oracle (e.g. one GET /_effects with pointer /charges here
	// and /refunds on the refunds operation).
	Oracle *Oracle `yaml:"oracle,omitempty" json:"oracle,omitempty"`
	// Marker is where a key's token for the downstream double goes in the
	// key's requests (nil: the key itself is the token).
	Marker *Marker `yaml:"marker,omitempty" json:"marker,omitempty"`
	// Query and OperationName are a GraphQL operation's document and the
	// name of the operation in it to run; Body is then its variables.
	Query         string `yaml:"query,omitempty" json:"query,omitempty"`
	OperationName string `yaml:"operation_name,omitempty" json:"operation_name,omitempty"`
	// Call is a JSON-RPC operation's method (Body its params); Tool an
	// MCP operation's tool (Body its arguments).
	Call string `yaml:"call,omitempty" json:"call,omitempty"`
	Tool string `yaml:"tool,omitempty" json:"tool,omitempty"`
}

// Mutation is a named materially different request: a body patch, query
// parameters set on the operation's path, header fields set on its
// headers, or several of them.
type Mutation struct {
	Name  string          `yaml:"name" json:"name"`
	Patch json.RawMessage `yaml:"-" json:"patch,omitempty"`
	// Query sets these parameters (replacing any of the same name in the
	// operation's path): another target URI (?capture=false).
	Query map[string]string `yaml:"query,omitempty" json:"query,omitempty"`
	// Headers sets these fields: a field that is part of the request (an
	// API version).
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
}

// ChangesQuery reports that m sends another query: a server may take that
// for another resource (Profile.QueryMismatch).
func (m Mutation) ChangesQuery() bool { return len(m.Query) > 0 }

// ChangesBody reports that m patches the body.
func (m Mutation) ChangesBody() bool { return len(m.Patch) > 0 }

// What says what m changes: "body", "query", "headers", or several joined
// with "+".
func (m Mutation) What() string {
	var parts []string
	if m.ChangesBody() {
		parts = append(parts, "body")
	}
	if m.ChangesQuery() {
		parts = append(parts, "query")
	}
	if len(m.Headers) > 0 {
		parts = append(parts, "headers")
	}
	return strings.Join(parts, "+")
}

// Variant names understood by the catalog.
const (
	VariantSlow           = "slow"            // stays in flight for at least Variant.Duration
	VariantBusinessError  = "business_error"  // a deterministic 4xx outcome (e.g. 402 decline)
	VariantTransientError = "transient_error" // a deterministic 5xx outcome (e.g. 503)
	VariantInvalid        = "invalid"         // fails validation (400/422)
	VariantLarge          = "large"           // succeeds with a response of at least 1 MiB (LargeResponse)
	VariantBinary         = "binary"          // succeeds with a binary (non-JSON) response
	VariantCrash          = "crash"           // the handler crashes (an unhandled exception: 5xx or a dropped connection)
	VariantTimeout        = "timeout"         // the handler times out (a downstream that never answers: 5xx, often 504)
)

// Variant is a merge patch plus what the variant promises.
type Variant struct {
	Patch json.RawMessage `yaml:"-" json:"patch"`
	// Raw, when set, is the whole body sent instead of a patched one (e.g.
	// a malformed payload for "invalid").
	Raw []byte `yaml:"-" json:"raw,omitempty"`
	// Duration: for "slow", how long the request stays in flight.
	Duration time.Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	// Status: the status the variant's first execution returns, when known.
	Status int `yaml:"status,omitempty" json:"status,omitempty"`
	// Downstream: the double answers the key's calls of a route this way
	// (slow, failing), so the API needs no knob in its body.
	Downstream *VariantDownstream `yaml:"downstream,omitempty" json:"downstream,omitempty"`
}

// ReferenceSlow is how long the reference contract's slow variant stays in
// flight: long enough to open a same-key burst inside it.
const ReferenceSlow = 1500 * time.Millisecond

// DefaultKeyHeader is the key field the draft names; a config without
// key_header gets it.
const DefaultKeyHeader = "Idempotency-Key"

// DefaultTimeout bounds each exchange of a config without timeout.
const DefaultTimeout = 10 * time.Second

// WithDefaults is t when it names its key field and timeout, else a copy
// with the config's defaults filled in (DefaultKeyHeader, DefaultTimeout).
// The library entry points (load.Run, drive.Run, scenarios.Run) take a
// Target a program may build by hand: they call it so that no request
// goes out with a key under an empty field name or with no time bound.
func (t *Target) WithDefaults() *Target {
	if t.KeyHeader != "" && t.Timeout > 0 {
		return t
	}
	c := *t
	if c.KeyHeader == "" {
		c.KeyHeader = DefaultKeyHeader
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return &c
}

// FromURL returns the Target of a server that follows the reference app's
// contract (idemcheck serve) at base.
func FromURL(base string, ttl, lease time.Duration) (*Target, error) {
	if IsGRPCURL(base) {
		// The reference contract is HTTP's; an RPC needs its method and the
		// key's place, which only a config says.
		return nil, fmt.Errorf("--target %q: a gRPC target needs --config (its key: and rpc: operations; copy examples/grpc.yaml)", base)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--target %q: want an absolute http(s) URL", base)
	}
	slow := Variant{Patch: json.RawMessage(fmt.Sprintf(`{"delay_ms":%d}`, ReferenceSlow.Milliseconds())), Duration: ReferenceSlow}
	// Another query and another API version are other requests to the
	// reference: it fingerprints the query and Api-Version.
	otherQuery := map[string]Mutation{
		"charges": {Name: "authorise-only", Query: map[string]string{"capture": "false"}},
		"refunds": {Name: "other-query", Query: map[string]string{"reason": "duplicate"}},
	}
	op := func(name string) Operation {
		return Operation{
			Name:      name,
			Method:    "POST",
			Path:      "/v1/" + name,
			Headers:   map[string]string{"Content-Type": "application/json"},
			Body:      json.RawMessage(`{"amount":1000,"currency":"usd","description":"idemcheck"}`),
			IDPointer: "/id",
			Mutations: []Mutation{
				{Name: "changed-amount", Patch: json.RawMessage(`{"amount":1001}`)},
				{Name: "added-field", Patch: json.RawMessage(`{"metadata":{"order":"idemcheck-2"}}`)},
				{Name: "changed-currency", Patch: json.RawMessage(`{"currency":"eur"}`)},
				otherQuery[name],
				{Name: "other-version", Headers: map[string]string{"Api-Version": "2024-06-01"}},
			},
			Variants: map[string]Variant{
				VariantSlow:           slow,
				VariantBusinessError:  {Patch: json.RawMessage(`{"fail":"decline"}`), Status: 402},
				VariantTransientError: {Patch: json.RawMessage(`{"fail":"transient"}`), Status: 503},
				VariantInvalid:        {Patch: json.RawMessage(`{"amount":"not-a-number"}`), Status: 400},
				VariantLarge:          {Patch: json.RawMessage(fmt.Sprintf(`{"pad_bytes":%d}`, LargeResponse))},
				VariantBinary:         {Patch: json.RawMessage(`{"format":"binary"}`)},
				VariantCrash:          {Patch: json.RawMessage(`{"fail":"crash"}`), Status: 500},
				VariantTimeout:        {Patch: json.RawMessage(`{"fail":"timeout"}`), Status: 504},
			},
		}
	}
	return &Target{
		BaseURL:   strings.TrimRight(base, "/"),
		KeyHeader: DefaultKeyHeader,
		KeySyntax: SFString,
		Timeout:   DefaultTimeout,
		Principals: []Principal{
			{Name: "alice", Headers: map[string]string{"Authorization": "Bearer alice"}},
			{Name: "bob", Headers: map[string]string{"Authorization": "Bearer bob"}},
		},
		Operations: []Operation{op("charges"), op("refunds")},
		Oracle:     &Oracle{URL: "/v1/effects?key={key}", Pointer: "/executions"},
		TTL:        ttl,
		Lease:      lease,
	}, nil
}

// LargeResponse is the least body the large variant must produce.
const LargeResponse = 1 << 20

package apispec

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/idemcheck/idemcheck/internal/grpccode"
)

// A gRPC target (base_url grpc://host:port, grpcs:// for TLS) calls one
// RPC per operation (rpc: pkg.Service/Method) with a request message
// written in protojson as the body. Its key goes where key: says: a field
// of the request message (AIP-155's request_id, AEP-155's idempotency_key
// {key, first_sent}) or a metadata entry. The engine reads its answers as
// HTTP statuses (ABORTED and ALREADY_EXISTS 409, INVALID_ARGUMENT 400,
// ..., google.rpc.Code's mapping), and the exact code travels in the
// Grpc-Status field of the recorded answer, where a status the config
// names by its code is judged (grpc_status.go).

// KeyPlace is where a gRPC target's key goes (the key: section).
type KeyPlace struct {
	// Field is a top-level field of the request message: request_id
	// (AIP-155, a string) or idempotency_key (AEP-155, with FirstSent).
	Field string `yaml:"field" json:"field,omitempty"`
	// FirstSent: Field is a message {key, first_sent} (AEP-155's
	// aep.api.IdempotencyKey); first_sent is the time the key was first
	// sent, the same on every retry.
	FirstSent bool `yaml:"first_sent" json:"first_sent,omitempty"`
	// Metadata is a metadata key (x-idempotency-key): the key is sent as
	// that metadata entry, raw.
	Metadata string `yaml:"metadata" json:"metadata,omitempty"`
	// Pointer, Directive (with Argument) and Meta are a body carrier's
	// key place (carrier.go): an RFC 6901 pointer into the body, the
	// variables, the params or the tool arguments; a GraphQL directive
	// on the mutation's field (@idempotent(key: "…")); an MCP _meta key.
	Pointer   string `yaml:"pointer" json:"pointer,omitempty"`
	Directive string `yaml:"directive" json:"directive,omitempty"`
	Argument  string `yaml:"argument" json:"argument,omitempty"`
	Meta      string `yaml:"meta" json:"meta,omitempty"`
}

// IsGRPC reports a gRPC target (a grpc:// or grpcs:// base URL).
func (t *Target) IsGRPC() bool { return IsGRPCURL(t.BaseURL) }

// IsGRPCURL reports a grpc:// or grpcs:// URL.
func IsGRPCURL(u string) bool {
	return strings.HasPrefix(u, "grpc://") || strings.HasPrefix(u, "grpcs://")
}

// KeyField is the request message's field the key goes in ("" when the
// key is a header or metadata entry).
func (t *Target) KeyField() string {
	if t.Key == nil {
		return ""
	}
	return t.Key.Field
}

// FirstSent is when key was first sent: the first call for a key notes
// the time, every later one gets it again, so a retry carries the
// first_sent it was first sent with (AEP-155: a reused key with another
// first_sent should be refused). Validate makes the memory; a Target not
// validated gets the time of each call.
func (t *Target) FirstSent(key string) time.Time {
	if t.firstSent == nil {
		return time.Now().UTC().Truncate(time.Millisecond)
	}
	t.firstSent.mu.Lock() // one time per key, even when two calls race
	defer t.firstSent.mu.Unlock()
	at, ok := t.firstSent.lru.Get(key)
	if !ok {
		at = time.Now().UTC().Truncate(time.Millisecond)
		t.firstSent.lru.Add(key, at)
	}
	return at
}

// firstSentKeys bounds FirstSent's memory: the keys used most recently
// (a load run's pool and hot keys are used on every round; a case's keys
// within seconds) keep their time, and a soak's fresh keys, never sent
// again, fall out instead of growing the map for the whole run.
const firstSentKeys = 1 << 17

// keyTimes holds FirstSent's times; a pointer in Target, so that copies
// of a Target (a managed one) share it.
type keyTimes struct {
	mu  sync.Mutex
	lru *lru.Cache[string, time.Time]
}

func newKeyTimes(size int) *keyTimes {
	c, err := lru.New[string, time.Time](size)
	if err != nil { // only for a size below 1
		panic(err)
	}
	return &keyTimes{lru: c}
}

// grpcAddress reports a grpc://host:port or grpcs://host:port URL: a
// server's address, no path or query.
func grpcAddress(s string) bool {
	u, err := url.Parse(s)
	return err == nil && IsGRPCURL(s) && u.Host != "" && u.Port() != "" && (u.Path == "" || u.Path == "/") && u.RawQuery == ""
}

// rpcRe is an rpc: value, [package.]Service/Method.
var rpcRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*/[A-Za-z_][A-Za-z0-9_]*$`)

// fieldRe is a protobuf field name.
var fieldRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// metadataRe is a metadata key gRPC lets a client send: lower case, not a
// binary (-bin) or reserved (grpc-) one.
var metadataRe = regexp.MustCompile(`^[0-9a-z_.-]+$`)

// validateGRPC checks what only a gRPC target has, or must not have.
func (t *Target) validateGRPC() error {
	if !t.IsGRPC() {
		if t.Key != nil && !t.KeyInBody() {
			return fmt.Errorf("key: a gRPC target's key place; an HTTP target's key is key_header")
		}
		if t.Protoset != "" {
			return fmt.Errorf("protoset %q: describes a gRPC target's methods; base_url is not grpc:// or grpcs://", t.Protoset)
		}
		for i, op := range t.Operations {
			if op.RPC != "" {
				return fmt.Errorf("operations[%d].rpc %q: needs a grpc:// or grpcs:// base_url", i, op.RPC)
			}
		}
		return nil
	}
	base := t.BaseURL
	if t.Command != "" { // a managed target's base_url names the picked {port}
		base = strings.ReplaceAll(base, PortPlaceholder, "1")
	}
	if !grpcAddress(base) {
		return fmt.Errorf("base_url %q: want grpc://host:port or grpcs://host:port (grpc://127.0.0.1:{port} with target_cmd)", t.BaseURL)
	}
	k := t.Key
	switch {
	case k == nil:
		return fmt.Errorf("key: a gRPC target says where its key goes: {field: request_id}, {field: idempotency_key, first_sent: true} or {metadata: x-idempotency-key}")
	case k.Pointer != "" || k.Directive != "" || k.Meta != "":
		return fmt.Errorf("key: pointer, directive and meta are a body carrier's; a gRPC key is a field or metadata")
	case (k.Field == "") == (k.Metadata == ""):
		return fmt.Errorf("key: give field (a request message field) or metadata (a metadata key), one of them")
	case k.Field != "" && !fieldRe.MatchString(k.Field):
		return fmt.Errorf("key.field %q: want a top-level field name of the request message (request_id)", k.Field)
	case k.FirstSent && k.Field == "":
		return fmt.Errorf("key.first_sent: needs key.field (a message {key, first_sent})")
	case k.Metadata != "" && (!metadataRe.MatchString(k.Metadata) || strings.HasSuffix(k.Metadata, "-bin") || strings.HasPrefix(k.Metadata, "grpc-")):
		return fmt.Errorf("key.metadata %q: want a lower-case ASCII metadata key, not -bin or grpc-", k.Metadata)
	}
	if k.FirstSent && t.firstSent == nil {
		t.firstSent = newKeyTimes(firstSentKeys)
	}
	if t.KeySource != nil {
		return fmt.Errorf("key_source: not yet for gRPC targets")
	}
	for _, o := range t.Oracles() {
		if strings.HasPrefix(o.URL, "/") {
			return fmt.Errorf("oracle %s: a gRPC target's oracle url is an absolute http(s) URL", o)
		}
	}
	for i, op := range t.Operations {
		at := fmt.Sprintf("operations[%d]", i)
		switch {
		case op.RPC == "":
			return fmt.Errorf("%s.rpc: a gRPC operation names its method (package.Service/Method)", at)
		case !rpcRe.MatchString(op.RPC):
			return fmt.Errorf("%s.rpc %q: want package.Service/Method", at, op.RPC)
		}
		if k.Field != "" && len(op.Body) > 0 {
			var body map[string]json.RawMessage
			if json.Unmarshal(op.Body, &body) == nil {
				if _, ok := body[k.Field]; ok {
					return fmt.Errorf("%s.body.%s: the key field is set by the suite", at, k.Field)
				}
			}
		}
	}
	return nil
}

// The codes the presets name (grpcPreset).
const (
	grpcAlreadyExists = 6
	grpcAborted       = 10
)

// GRPCCodeName is the name of gRPC code c (ABORTED), or its number.
func GRPCCodeName(c int) string { return grpccode.Name(c) }

// GRPCHTTPStatus is the HTTP status google.rpc.Code maps gRPC code c to
// (500 for a code it does not know).
func GRPCHTTPStatus(c int) int { return grpccode.HTTPStatus(c) }

// grpcTarget applies what the config says of a gRPC target to t: the
// principals' metadata are their headers, a metadata key is the key
// header, sent raw. An HTTP target must not use the gRPC words.
func (cf *configFile) grpcTarget(t *Target) error {
	grpc := t.IsGRPC()
	for i := range t.Principals {
		pr := &t.Principals[i]
		switch {
		case pr.Metadata == nil:
		case !grpc:
			return fmt.Errorf("principals[%d].metadata: a gRPC target's word; an HTTP target's principal has headers", i)
		case pr.Headers != nil:
			return fmt.Errorf("principals[%d]: give metadata or headers, not both", i)
		default:
			pr.Headers, pr.Metadata = pr.Metadata, nil
		}
	}
	if !grpc {
		return nil
	}
	if cf.KeyHeader != "" {
		return fmt.Errorf("key_header %q: a gRPC target's key is key: {metadata: %s} (or a field)", cf.KeyHeader, strings.ToLower(cf.KeyHeader))
	}
	if cf.KeySyntax != "" && cf.KeySyntax != Raw {
		return fmt.Errorf("key_syntax %q: a gRPC target sends its key raw", cf.KeySyntax)
	}
	t.KeySyntax = Raw
	if t.Key != nil && t.Key.Metadata != "" {
		t.KeyHeader = t.Key.Metadata
	}
	return nil
}

// Judge makes p judge t: a profile judging an HTTP target, whose answers
// have no code, holds each gRPC code it names as its HTTP status
// (HTTPStatuses).
func (t *Target) Judge(p *Profile) {
	if !t.IsGRPC() {
		p.HTTPStatuses()
	}
}

// Rebase points t at base (--base-url): an absolute URL of t's carrier.
// The operations were written for one carrier: an RPC is not sent to an
// HTTP URL, nor a path to a gRPC server.
func (t *Target) Rebase(base string) error {
	u, err := url.Parse(base)
	if err == nil && u.Host != "" && IsGRPCURL(base) != t.IsGRPC() {
		want := "an http(s) URL: the config's operations are HTTP requests"
		if t.IsGRPC() {
			want = "a grpc:// or grpcs:// URL: the config's operations are RPCs (rpc:)"
		}
		return fmt.Errorf("--base-url %q: want %s", base, want)
	}
	// A grpc(s):// one was checked as the config's base_url.
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && !t.IsGRPC()) || u.Host == "" {
		return fmt.Errorf("--base-url %q: want an absolute http(s) URL (grpc:// or grpcs:// for a gRPC target)", base)
	}
	t.BaseURL = strings.TrimRight(base, "/")
	return nil
}

// GRPCServer parses raw as the address of a gRPC server
// (grpc://host:port or grpcs://host:port, no path): init --grpc.
func GRPCServer(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || !IsGRPCURL(raw) || u.Host == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("--grpc %q: want grpc://host:port or grpcs://host:port", raw)
	}
	return u, nil
}

// NotForRPCs refuses raw, the URL of a flag that describes an HTTP API
// (init --probe, load --target), when it is a gRPC server's: the error is
// refusal, which says what describes one instead; nil otherwise.
func NotForRPCs(raw, refusal string) error {
	if !IsGRPCURL(raw) {
		return nil
	}
	return errors.New(refusal)
}

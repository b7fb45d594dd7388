package apispec

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// A key need not travel in a header (docs/carriers.md). carrier: names
// how an HTTP target's requests carry it and how its answers are read:
//
//   - header (the default): the key_header field, HTTP statuses;
//   - json-body: the key at a JSON pointer of the HTTP body (key:
//     {pointer: /idempotency_key}), HTTP statuses;
//   - graphql: POST of {query, variables}; the key is a directive on the
//     mutation's field (key: {directive: idempotent}, Shopify's
//     @idempotent(key: "…")) or a variable or input field (key: {pointer:
//     /input/idempotencyKey}, into the variables); answers are read from
//     GraphQL's shape (Answers);
//   - jsonrpc: a JSON-RPC 2.0 call per operation (call: method), the key
//     at a pointer of its params;
//   - mcp: an MCP server over streamable HTTP, one tools/call per
//     operation (tool: name), after the initialize handshake; the key is
//     a tool argument (key: {pointer: /idempotency_key}, AdCP's) or a
//     _meta field (key: {meta: idempotencyKey}).
//
// A GraphQL or JSON-RPC answer comes under HTTP 200 whatever happened;
// the carrier reads it into the status the catalog judges: a success
// 200, an error its configured code's status (Answers), so that the
// profile's statuses and every case's judgement stay as they are.

// Carrier kinds (Target.Carrier).
const (
	CarrierHeader   = "header"
	CarrierJSONBody = "json-body"
	CarrierGraphQL  = "graphql"
	CarrierJSONRPC  = "jsonrpc"
	CarrierMCP      = "mcp"
)

// carrierKinds are the kinds a config may name.
var carrierKinds = []string{CarrierHeader, CarrierJSONBody, CarrierGraphQL, CarrierJSONRPC, CarrierMCP}

// Answers is how a GraphQL, JSON-RPC or MCP answer is read (answers:).
// An answer's codes are every "code" member of its error parts: a
// GraphQL error's extensions.code, a userErrors entry's code, a JSON-RPC
// error's code (as its decimal text) and error.data's code, an MCP tool
// result's (isError true) code members.
type Answers struct {
	// Missing, Mismatch and InFlight are the codes of the three
	// idempotency errors: an answer carrying one stands for the profile's
	// missing_status, mismatch_status or in_flight_status (its first;
	// 400, 422 and 409 when the profile names none).
	Missing  []string `yaml:"missing" json:"missing,omitempty"`
	Mismatch []string `yaml:"mismatch" json:"mismatch,omitempty"`
	InFlight []string `yaml:"in_flight" json:"in_flight,omitempty"`
	// Codes are the HTTP statuses other codes stand for (DECLINED: 402,
	// UNAVAILABLE: 503): a variant's declared status is judged by them.
	Codes map[string]int `yaml:"codes" json:"codes,omitempty"`
	// Error is the status of an error answer none of the codes names
	// (default 400).
	Error int `yaml:"error" json:"error,omitempty"`
	// Replayed is the RFC 6901 pointer of a replay marker in the result
	// (AdCP's /replayed): left out of what replays are compared by, and
	// noted.
	Replayed string `yaml:"replayed" json:"replayed,omitempty"`
	// TTLTool and TTLPointer: an MCP server that declares its replay TTL
	// in a tool's result (AdCP's get_adcp_capabilities,
	// /adcp/idempotency/replay_ttl_seconds): when the config gives no
	// ttl, the run reads it there, in seconds, before planning.
	TTLTool    string `yaml:"ttl_tool" json:"ttl_tool,omitempty"`
	TTLPointer string `yaml:"ttl_pointer" json:"ttl_pointer,omitempty"`

	// missing, mismatch and inFlight are the profile's statuses for the
	// three (resolve; 0: the defaults).
	missing, mismatch, inFlight int
}

// CarrierKind is t's carrier (CarrierHeader when none is named).
func (t *Target) CarrierKind() string {
	if t.Carrier == "" {
		return CarrierHeader
	}
	return t.Carrier
}

// IsGraphQL reports a GraphQL target.
func (t *Target) IsGraphQL() bool { return t.Carrier == CarrierGraphQL }

// IsMCP reports an MCP target.
func (t *Target) IsMCP() bool { return t.Carrier == CarrierMCP }

// IsJSONRPC reports a JSON-RPC target (MCP included: its calls are
// JSON-RPC).
func (t *Target) IsJSONRPC() bool { return t.Carrier == CarrierJSONRPC || t.Carrier == CarrierMCP }

// KeyInBody reports a key carried in the request body of an HTTP target
// (json-body, graphql, jsonrpc, mcp): no header carries it.
func (t *Target) KeyInBody() bool {
	switch t.Carrier {
	case CarrierJSONBody, CarrierGraphQL, CarrierJSONRPC, CarrierMCP:
		return true
	}
	return false
}

// ReadsAnswers reports a target whose answers come under HTTP 200 and
// are read by Answers (graphql, jsonrpc, mcp).
func (t *Target) ReadsAnswers() bool { return t.IsGraphQL() || t.IsJSONRPC() }

// AnswerStatus is the status an answer carrying codes stands for, and
// the code that decided it ("" when none did).
func (t *Target) AnswerStatus(codes []string) (int, string) {
	a := t.Answers
	if a == nil {
		a = &Answers{}
	}
	missing, mismatch, inFlight := a.statuses()
	for _, c := range codes {
		switch {
		case has(a.InFlight, c):
			return inFlight, c
		case has(a.Mismatch, c):
			return mismatch, c
		case has(a.Missing, c):
			return missing, c
		}
		if s, ok := a.Codes[c]; ok {
			return s, c
		}
	}
	if a.Error != 0 {
		return a.Error, ""
	}
	return http.StatusBadRequest, ""
}

// AnswerSignals are the statuses an answer carrying one of the answers'
// mismatch or in_flight codes stands for on a carrier reading its
// answers (GraphQL, JSON-RPC, MCP); 0 for a code list left empty, and
// both 0 on other carriers.
func (t *Target) AnswerSignals() (mismatch, inFlight int) {
	a := t.Answers
	if !t.ReadsAnswers() || a == nil {
		return 0, 0
	}
	_, mismatch, inFlight = a.statuses()
	if len(a.Mismatch) == 0 {
		mismatch = 0
	}
	if len(a.InFlight) == 0 {
		inFlight = 0
	}
	return mismatch, inFlight
}

// statuses are the statuses the three idempotency errors stand for: the
// profile's first (resolve), else 400, 422 and 409.
func (a *Answers) statuses() (missing, mismatch, inFlight int) {
	missing, mismatch, inFlight = http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusConflict
	if a.missing != 0 {
		missing = a.missing
	}
	if a.mismatch != 0 {
		mismatch = a.mismatch
	}
	if a.inFlight != 0 {
		inFlight = a.inFlight
	}
	return missing, mismatch, inFlight
}

// resolve takes the statuses the idempotency errors stand for from p.
func (a *Answers) resolve(p *Profile) {
	first := func(ss Statuses) int {
		if len(ss) > 0 {
			return HTTPStatusOf(ss[0])
		}
		return 0
	}
	a.missing, a.mismatch, a.inFlight = first(p.MissingStatus), first(p.MismatchStatus), first(p.InFlightStatus)
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// mcpMetaRe is an MCP _meta key: an optional reverse-DNS prefix and a
// name (the MCP specification's _meta rules, simplified to what a key
// field needs).
var mcpMetaRe = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9.-]*/)?[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

// graphQLNameRe is a GraphQL Name.
var graphQLNameRe = regexp.MustCompile(`^[_A-Za-z][_0-9A-Za-z]*$`)

// validateCarrier checks what the body carriers need, with one-line
// errors naming the field.
func (t *Target) validateCarrier() error {
	kind := t.CarrierKind()
	if !has(carrierKinds, kind) {
		return fmt.Errorf("carrier %q: want %s", t.Carrier, strings.Join(carrierKinds, ", "))
	}
	if t.IsGRPC() {
		if t.Carrier != "" {
			return fmt.Errorf("carrier %q: a grpc:// target carries its key as key: says (a field or metadata)", t.Carrier)
		}
		return nil
	}
	if !t.ReadsAnswers() && t.Answers != nil {
		return fmt.Errorf("answers: read GraphQL, JSON-RPC and MCP answers; carrier %s answers with HTTP statuses", kind)
	}
	if !t.KeyInBody() {
		return nil
	}
	k := t.Key
	if k == nil {
		return fmt.Errorf("key: carrier %s says where its key goes: %s", kind, keyPlaces(kind))
	}
	if k.Field != "" || k.Metadata != "" || k.FirstSent {
		return fmt.Errorf("key: field, metadata and first_sent are a gRPC key's; carrier %s takes %s", kind, keyPlaces(kind))
	}
	set := 0
	for _, s := range []string{k.Pointer, k.Directive, k.Meta} {
		if s != "" {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("key: give one of %s", keyPlaces(kind))
	}
	switch {
	case k.Pointer != "":
		toks, err := jsonx.ParsePointer(k.Pointer)
		if err != nil || len(toks) == 0 {
			return fmt.Errorf("key.pointer %q: want an RFC 6901 pointer to a member (/idempotency_key)", k.Pointer)
		}
	case k.Directive != "" && kind != CarrierGraphQL:
		return fmt.Errorf("key.directive %q: a GraphQL directive; carrier %s takes %s", k.Directive, kind, keyPlaces(kind))
	case k.Directive != "" && !graphQLNameRe.MatchString(k.Directive):
		return fmt.Errorf("key.directive %q: want a GraphQL name (idempotent)", k.Directive)
	case k.Meta != "" && kind != CarrierMCP:
		return fmt.Errorf("key.meta %q: an MCP request's _meta field; carrier %s takes %s", k.Meta, kind, keyPlaces(kind))
	case k.Meta != "" && !mcpMetaRe.MatchString(k.Meta):
		return fmt.Errorf("key.meta %q: want an MCP _meta key (idempotencyKey, io.example/idempotencyKey)", k.Meta)
	}
	if k.Argument != "" && (k.Directive == "" || !graphQLNameRe.MatchString(k.Argument)) {
		return fmt.Errorf("key.argument %q: the GraphQL name of key.directive's argument (key)", k.Argument)
	}
	if t.KeySource != nil {
		return fmt.Errorf("key_source: not yet for carrier %s", kind)
	}
	if t.KeySyntax != Raw {
		return fmt.Errorf("key_syntax %q: carrier %s writes its key as a JSON or GraphQL string (raw)", t.KeySyntax, kind)
	}
	if a := t.Answers; a != nil {
		for code, s := range a.Codes {
			if s < 200 || s > 599 {
				return fmt.Errorf("answers.codes.%s %d: want an HTTP status (200-599)", code, s)
			}
		}
		if a.Error != 0 && (a.Error < 400 || a.Error > 599) {
			return fmt.Errorf("answers.error %d: want an error status (400-599)", a.Error)
		}
		if (a.TTLTool == "") != (a.TTLPointer == "") || (a.TTLTool != "" && kind != CarrierMCP) {
			return fmt.Errorf("answers.ttl_tool %q / ttl_pointer %q: an MCP tool and the pointer to its declared TTL in seconds, both or neither", a.TTLTool, a.TTLPointer)
		}
		if a.TTLTool != "" && t.Command != "" {
			return fmt.Errorf("answers.ttl_tool: not with target_cmd (the TTL is read before the target starts): declare ttl")
		}
		if a.Replayed != "" {
			if toks, err := jsonx.ParsePointer(a.Replayed); err != nil || len(toks) == 0 {
				return fmt.Errorf("answers.replayed %q: want an RFC 6901 pointer into the result (/replayed)", a.Replayed)
			}
		}
	}
	for i, op := range t.Operations {
		at := fmt.Sprintf("operations[%d]", i)
		switch kind {
		case CarrierGraphQL:
			if strings.TrimSpace(op.Query) == "" {
				return fmt.Errorf("%s.query: a GraphQL operation's document (mutation { ... })", at)
			}
		case CarrierJSONRPC:
			if op.Call == "" {
				return fmt.Errorf("%s.call: a JSON-RPC operation names its method", at)
			}
		case CarrierMCP:
			if op.Tool == "" {
				return fmt.Errorf("%s.tool: an MCP operation names the tool it calls", at)
			}
		}
		if op.Method != http.MethodPost && kind != CarrierJSONBody {
			return fmt.Errorf("%s.method %q: carrier %s posts every call", at, op.Method, kind)
		}
		if k.Pointer != "" {
			doc := decodeOrNil(op.Body)
			if v, ok := jsonx.Pointer(doc, k.Pointer); ok && v != nil {
				return fmt.Errorf("%s.body: holds key.pointer %s; the key is set by the suite", at, k.Pointer)
			}
			// The key is written into the body's own bytes: its parent
			// object must be there.
			parent := k.Pointer[:strings.LastIndexByte(k.Pointer, '/')]
			if v, ok := jsonx.Pointer(doc, parent); kind == CarrierJSONBody && !isObject(v, ok) {
				return fmt.Errorf("%s.body: key.pointer %s needs an object at %q in the body", at, k.Pointer, parent)
			}
		}
	}
	return nil
}

func isObject(v any, ok bool) bool {
	_, obj := v.(map[string]any)
	return ok && obj
}

func decodeOrNil(b []byte) any {
	v, err := jsonx.Decode(b)
	if err != nil {
		return nil
	}
	return v
}

// keyPlaces says where carrier kind's key may go.
func keyPlaces(kind string) string {
	switch kind {
	case CarrierGraphQL:
		return "{directive: idempotent} (@idempotent(key: \"…\") on the mutation's field) or {pointer: /input/idempotencyKey} (a variable or input field)"
	case CarrierMCP:
		return "{pointer: /idempotency_key} (a tool argument) or {meta: idempotencyKey} (a _meta field)"
	case CarrierJSONRPC:
		return "{pointer: /idempotency_key} (in the call's params)"
	}
	return "{pointer: /idempotency_key} (in the JSON body)"
}

// carrierOperation applies an operation's carrier words (query, call,
// tool) and refuses them where they do not belong.
func carrierOperation(t *Target, oc operationConfig, op *Operation, at string) error {
	kind := t.CarrierKind()
	switch {
	case oc.Query != "" && kind != CarrierGraphQL:
		return fmt.Errorf("%s.query: a GraphQL document; carrier is %s", at, kind)
	case oc.OperationName != "" && kind != CarrierGraphQL:
		return fmt.Errorf("%s.operation_name: a GraphQL operation's name; carrier is %s", at, kind)
	case oc.Call != "" && kind != CarrierJSONRPC:
		return fmt.Errorf("%s.call: a JSON-RPC method; carrier is %s", at, kind)
	case oc.Tool != "" && kind != CarrierMCP:
		return fmt.Errorf("%s.tool: an MCP tool; carrier is %s", at, kind)
	}
	op.Query, op.OperationName, op.Call, op.Tool = oc.Query, oc.OperationName, oc.Call, oc.Tool
	if t.ReadsAnswers() {
		if op.Method == "" {
			op.Method = http.MethodPost
		}
		if op.Path == "" {
			op.Path = map[string]string{CarrierGraphQL: "/graphql", CarrierJSONRPC: "/rpc", CarrierMCP: "/mcp"}[kind]
		}
	}
	return nil
}

// presetAnswers are the codes a preset's documents name, for a config
// that gives no answers: section (nil: none named, every error reads as
// answers.error's status).
func presetAnswers(preset string) *Answers {
	switch preset {
	case "shopify":
		// The codes of the mutations taking @idempotent, as the Admin
		// API's schema declares them: values of each mutation's
		// UserErrorCode enum, so they come as userErrors[].code (read like
		// extensions.code). "IDEMPOTENCY_CONCURRENT_REQUEST — This request
		// is currently in progress, please try again";
		// "IDEMPOTENCY_KEY_PARAMETER_MISMATCH — The same idempotency key
		// cannot be used with different operation parameters"
		// (shopify.dev/docs/api/admin-graphql/latest/enums/
		// InventorySetQuantitiesUserErrorCode; the same two in
		// InventoryAdjustQuantitiesUserErrorCode,
		// InventoryMoveQuantitiesUserErrorCode and
		// InventoryShipmentAddItemsUserErrorCode, as nozzlegear/ShopifySharp's
		// types generated from the schema list them). Left out:
		// IDEMPOTENCY_PREVIOUS_ATTEMPT_FAILED ("A previous request with this
		// idempotency key failed. Retry with a new idempotency key", in the
		// enum as of 2026-10): a retry after a failure refused, neither
		// replayed nor executed, which no status of the profile stands
		// for; and the missing directive, whose runtime error the 2026-04
		// changelog names no code for.
		return &Answers{Mismatch: []string{"IDEMPOTENCY_KEY_PARAMETER_MISMATCH"}, InFlight: []string{"IDEMPOTENCY_CONCURRENT_REQUEST"}}
	case "adcp":
		// IDEMPOTENCY_CONFLICT and RATE_LIMITED are AdCP's; it names no
		// code for a missing key (a schema error) or a duplicate in flight
		// (the storyboard wants it to converge on one resource).
		return &Answers{Mismatch: []string{"IDEMPOTENCY_CONFLICT"}, Codes: map[string]int{"RATE_LIMITED": 429}, Replayed: "/replayed",
			TTLTool: "get_adcp_capabilities", TTLPointer: "/adcp/idempotency/replay_ttl_seconds"}
	}
	return nil
}

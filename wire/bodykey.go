package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// The body carriers' requests (apispec/carrier.go): the operation's body
// is the payload (the HTTP body, a GraphQL operation's variables, a
// JSON-RPC call's params, an MCP tool's arguments); the key goes into it
// at key.pointer, or into the GraphQL document as a directive, or into an
// MCP call's _meta; the payload is then wrapped in the carrier's
// envelope.

// bodyWithKey is the request body of a body carrier: payload with the
// key placed (absent when !present), in the carrier's envelope.
func bodyWithKey(t *apispec.Target, op *apispec.Operation, payload []byte, key string, present bool) []byte {
	k := t.Key
	switch {
	case k.Pointer != "" && t.CarrierKind() == apispec.CarrierJSONBody:
		return inPlace(payload, k.Pointer, key, present)
	case k.Pointer != "":
		payload = withPointer(payload, k.Pointer, key, present)
	}
	switch t.CarrierKind() {
	case apispec.CarrierGraphQL:
		doc := op.Query
		if k.Directive != "" && present {
			doc = directiveDocument(op, k.Directive, k.Argument, key)
		}
		env := struct {
			Query         string          `json:"query"`
			OperationName string          `json:"operationName,omitempty"`
			Variables     json.RawMessage `json:"variables,omitempty"`
		}{doc, op.OperationName, jsonOrNil(payload)}
		return marshal(env)
	case apispec.CarrierJSONRPC:
		return marshal(rpcEnvelope{JSONRPC: "2.0", ID: nextRPCID(), Method: op.Call, Params: jsonOrNil(payload)})
	case apispec.CarrierMCP:
		params := map[string]any{"name": op.Tool}
		if args := jsonOrNil(payload); args != nil {
			params["arguments"] = args
		}
		if k.Meta != "" && present {
			params["_meta"] = map[string]string{k.Meta: key}
		}
		return marshal(rpcEnvelope{JSONRPC: "2.0", ID: nextRPCID(), Method: "tools/call", Params: marshal(params)})
	}
	return payload
}

// rpcEnvelope is a JSON-RPC 2.0 request.
type rpcEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      int64           `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// rpcIDs numbers the JSON-RPC requests of a process: an id is never
// reused (MCP: "MUST NOT have been previously used by the requestor
// within the same session"), and the answers are compared without it.
var rpcIDs atomic.Int64

func nextRPCID() int64 { return rpcIDs.Add(1) }

// marshal encodes v, which holds only strings and raw JSON that parsed.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("wire: encoding a request envelope: %v", err)) // raw members are valid JSON
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// jsonOrNil is b as a raw JSON member: nil when empty. A body that is
// not JSON (a variant's raw payload) goes as a JSON string, so the
// envelope stays valid and the server sees a payload of the wrong type.
func jsonOrNil(b []byte) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if !json.Valid(b) {
		return marshal(string(b))
	}
	return b
}

// withPointer is the JSON document doc with the string key at pointer p
// (its missing parent objects made), or with p's member removed when
// !present. A document that is not JSON is returned as it is.
func withPointer(doc []byte, p, key string, present bool) []byte {
	var v any = map[string]any{}
	if len(bytes.TrimSpace(doc)) > 0 {
		d, err := jsonx.Decode(doc)
		if err != nil {
			return doc
		}
		v = d
	}
	toks, err := jsonx.ParsePointer(p)
	if err != nil || len(toks) == 0 {
		return doc
	}
	v, ok := setPointer(v, toks, key, present)
	if !ok {
		return doc
	}
	return marshal(v)
}

// inPlace is doc with the string key at pointer p and every other byte
// as it was (member order, spacing: what the cases that send a body's
// own bytes need), or doc itself when !present and p names nothing. p's
// parent is an object of doc (apispec validates the bodies); a document
// where it is not (a variant's raw payload) goes as it is.
func inPlace(doc []byte, p, key string, present bool) []byte {
	_, _, found := jsonx.Span(doc, p)
	switch {
	case !present && !found:
		return doc
	case !present:
		return withPointer(doc, p, key, false)
	case found:
		out, _ := jsonx.Replace(doc, p, marshal(key))
		return out
	}
	i := strings.LastIndexByte(p, '/')
	start, end, ok := jsonx.Span(doc, p[:i])
	if !ok || doc[start] != '{' {
		return doc
	}
	name, _ := jsonx.ParsePointer(p[i:])
	member := append(append(marshal(name[0]), ':'), marshal(key)...)
	if len(bytes.TrimSpace(doc[start+1:end-1])) > 0 {
		member = append(member, ',')
	}
	out := make([]byte, 0, len(doc)+len(member))
	return append(append(append(out, doc[:start+1]...), member...), doc[start+1:]...)
}

// setPointer sets (or removes) the member toks names under v; ok is false
// when a token crosses a scalar or an array index out of range.
func setPointer(v any, toks []string, key string, present bool) (any, bool) {
	last := len(toks) == 1
	switch d := v.(type) {
	case map[string]any:
		if last {
			if present {
				d[toks[0]] = key
			} else {
				delete(d, toks[0])
			}
			return d, true
		}
		child, found := d[toks[0]]
		if !found || child == nil {
			if !present {
				return d, true
			}
			child = map[string]any{}
		}
		c, ok := setPointer(child, toks[1:], key, present)
		d[toks[0]] = c
		return d, ok
	case []any:
		i, err := strconv.Atoi(toks[0])
		if err != nil || i < 0 || i >= len(d) {
			return d, false
		}
		if last {
			if !present {
				return append(d[:i:i], d[i+1:]...), true
			}
			d[i] = key
			return d, true
		}
		c, ok := setPointer(d[i], toks[1:], key, present)
		d[i] = c
		return d, ok
	}
	return v, false
}

// keyPlaceholder stands for the key in a formatted document: the key's
// GraphQL string replaces it.
const keyPlaceholder = "idemcheck-key-placeholder-3f9c2e"

// directiveDocs caches each operation's document with the key directive
// on its mutation's field, formatted once with keyPlaceholder.
var directiveDocs sync.Map // directiveDocKey -> string

type directiveDocKey struct{ query, operation, directive, argument string }

// directiveDocument is op's document with @directive(argument: "key") on
// the first field of the operation it runs (Shopify's
// refundCreate(...) @idempotent(key: "…")). A document that does not
// parse, or has no such field, goes unchanged: the server answers it
// (apispec validates the configured documents).
func directiveDocument(op *apispec.Operation, directive, argument, key string) string {
	if argument == "" {
		argument = "key"
	}
	ck := directiveDocKey{op.Query, op.OperationName, directive, argument}
	tpl, ok := directiveDocs.Load(ck)
	if !ok {
		tpl = withDirective(op.Query, op.OperationName, directive, argument)
		directiveDocs.Store(ck, tpl)
	}
	return strings.Replace(tpl.(string), strconv.Quote(keyPlaceholder), string(marshal(key)), 1)
}

// withDirective formats query with the directive on the top field of
// the operation named operation (the only one when empty).
func withDirective(query, operation, directive, argument string) string {
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		return query
	}
	f := TopField(doc, operation)
	if f == nil {
		return query
	}
	f.Directives = append(f.Directives, &ast.Directive{Name: directive, Arguments: ast.ArgumentList{
		{Name: argument, Value: &ast.Value{Kind: ast.StringValue, Raw: keyPlaceholder}}}})
	var b strings.Builder
	formatter.NewFormatter(&b, formatter.WithIndent("  ")).FormatQueryDocument(doc)
	return b.String()
}

// TopField is the first field selected by the operation named name in
// doc (the only operation when name is empty), nil when there is none.
func TopField(doc *ast.QueryDocument, name string) *ast.Field {
	var op *ast.OperationDefinition
	switch {
	case name != "":
		op = doc.Operations.ForName(name)
	case len(doc.Operations) == 1:
		op = doc.Operations[0]
	}
	if op == nil {
		return nil
	}
	for _, s := range op.SelectionSet {
		if f, ok := s.(*ast.Field); ok {
			return f
		}
	}
	return nil
}

// KeyReader reads the key of a request built for t from its body (a
// fault proxy's attempts are numbered by key); nil for a target whose
// key is a header field or gRPC's.
func KeyReader(t *apispec.Target) func(h http.Header, body []byte) string {
	if !t.KeyInBody() {
		return nil
	}
	k := t.Key
	at := func(prefix string) func(http.Header, []byte) string {
		return func(_ http.Header, body []byte) string { return jsonx.PointerText(body, prefix+k.Pointer) }
	}
	switch t.CarrierKind() {
	case apispec.CarrierGraphQL:
		if k.Directive != "" {
			return func(_ http.Header, body []byte) string { return directiveKey(body, k.Directive, k.Argument) }
		}
		return at("/variables")
	case apispec.CarrierJSONRPC:
		return at("/params")
	case apispec.CarrierMCP:
		if k.Meta != "" {
			p := "/params/_meta/" + strings.ReplaceAll(strings.ReplaceAll(k.Meta, "~", "~0"), "/", "~1")
			return func(_ http.Header, body []byte) string { return jsonx.PointerText(body, p) }
		}
		return at("/params/arguments")
	}
	return at("")
}

// directiveKey is the key a GraphQL request carries in its directive: a
// string literal, or the variable it names.
func directiveKey(body []byte, directive, argument string) string {
	if argument == "" {
		argument = "key"
	}
	var req struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: req.Query})
	if err != nil {
		return ""
	}
	f := TopField(doc, req.OperationName)
	if f == nil {
		return ""
	}
	d := f.Directives.ForName(directive)
	if d == nil {
		return ""
	}
	a := d.Arguments.ForName(argument)
	switch {
	case a == nil || a.Value == nil:
		return ""
	case a.Value.Kind == ast.Variable:
		s, _ := req.Variables[a.Value.Raw].(string)
		return s
	}
	return a.Value.Raw
}

// Package initconfig writes an idemcheck config from what an API team
// already has (idemcheck init): an OpenAPI 3.0 or 3.1 document
// (FromOpenAPI, read with kin-openapi) or a live endpoint (Probe, through
// the request layer every face uses). The file is built as YAML nodes so
// that each value carries a comment saying where it came from, "guessed:"
// for a guess and "TODO:" for a gap; what a document cannot say (the
// evidence source, the slow and error variants) is written as commented
// config. It imports scenarios and nothing imports it but the CLI.
package initconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemcheck/idemcheck/scenarios"
)

// ErrDocument: the OpenAPI document cannot be read, parsed or used
// (exit 2). A URL that does not answer wraps scenarios.ErrUnreachable
// instead (exit 4).
var ErrDocument = errors.New("openapi")

// DefaultKeyHeader is the header the draft names.
const DefaultKeyHeader = "Idempotency-Key"

// OpenAPIOptions says what FromOpenAPI reads and keeps.
type OpenAPIOptions struct {
	// Source is a file path or an http(s) URL of an OpenAPI 3.0 or 3.1
	// document, YAML or JSON.
	Source string
	// Operations are the operationIds to write (empty: those declaring
	// the key header, else every POST and PATCH).
	Operations []string
	// KeyHeader is the key header's name (empty: Idempotency-Key, or the
	// one header parameter whose name holds "idempotency").
	KeyHeader string
	// Timeout bounds fetching a URL and its external $refs (0: 10s); TLS
	// reaches an https one (a private CA, a client certificate).
	Timeout time.Duration
	TLS     scenarios.TLS
	// Command is the command line that asked, quoted in the file's head.
	Command string
	// NoValidate reads a document that does not validate (a conflict
	// elsewhere in a large document) instead of refusing it.
	NoValidate bool
}

// FromOpenAPI reads an OpenAPI document and writes a commented idemcheck
// config: every value it took from the document says where from, every
// guess says "guessed:", every gap says "TODO:".
func FromOpenAPI(ctx context.Context, o OpenAPIOptions) ([]byte, error) {
	doc, err := loadDocument(ctx, o.Source, o.Timeout, o.TLS, !o.NoValidate)
	if err != nil {
		return nil, err
	}
	a := analysis{doc: doc, src: o.Source, keyHeader: o.KeyHeader}
	ops, err := a.selectOperations(o.Operations)
	if err != nil {
		return nil, err
	}
	return a.write(ops, o.Command)
}

// loadDocument loads and validates the document; errors are one line
// naming the source.
func loadDocument(ctx context.Context, src string, timeout time.Duration, tls scenarios.TLS, validate bool) (*openapi3.T, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	// The request layer's client, as every face builds it.
	var reach scenarios.Target
	if err := reach.SetTLS(tls); err != nil {
		return nil, fmt.Errorf("tls.%v", err)
	}
	client := reach.Client(timeout)
	defer client.CloseIdleConnections()
	loc, remote := &url.URL{Path: filepath.ToSlash(src)}, false
	if u, err := url.Parse(src); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		loc, remote = u, true
	}
	loader := openapi3.NewLoader()
	loader.Context = ctx
	loader.IsExternalRefsAllowed = true
	loader.ReadFromURIFunc = func(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
		if remote && u.Scheme != "http" && u.Scheme != "https" {
			// A document from the network does not get to read this
			// machine's files through its $refs.
			return nil, fmt.Errorf("$ref %s: a remote document's $refs must be http(s) URLs", u)
		}
		return readURI(ctx, client, u)
	}
	doc, err := loader.LoadFromURI(loc)
	if err != nil {
		if remote && errors.Is(err, scenarios.ErrUnreachable) {
			return nil, fmt.Errorf("%w: %s: %v", scenarios.ErrUnreachable, src, unwrapUnreachable(err))
		}
		return nil, fmt.Errorf("%w %s: %s", ErrDocument, src, singleLine(err.Error()))
	}
	if doc.OpenAPI == "" {
		return nil, fmt.Errorf("%w %s: no openapi field: want an OpenAPI 3.0 or 3.1 document (convert a Swagger 2.0 one first)", ErrDocument, src)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		return nil, fmt.Errorf("%w %s: openapi %q: want an OpenAPI 3.0 or 3.1 document", ErrDocument, src, doc.OpenAPI)
	}
	// Examples, defaults and patterns that a validator refuses (a pattern
	// Go's regexp cannot compile, a default outside its enum) do not stop
	// init: the bodies it writes are checked against the schema anyway.
	if !validate {
		return doc, nil
	}
	if err := doc.Validate(ctx, openapi3.DisableExamplesValidation(), openapi3.DisableSchemaDefaultsValidation(),
		openapi3.DisableSchemaPatternValidation()); err != nil {
		return nil, fmt.Errorf("%w %s: invalid (--no-validate reads it anyway): %s", ErrDocument, src, singleLine(err.Error()))
	}
	if doc.Paths == nil || doc.Paths.Len() == 0 {
		return nil, fmt.Errorf("%w %s: paths: the document describes no operation", ErrDocument, src)
	}
	return doc, nil
}

// readURI reads a file or an http(s) URL (the document and its external
// $refs); a URL that gives no HTTP answer is ErrUnreachable.
func readURI(ctx context.Context, c *http.Client, u *url.URL) ([]byte, error) {
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme != "" && u.Scheme != "file" {
			return nil, fmt.Errorf("%s: only files and http(s) URLs are read", u)
		}
		return os.ReadFile(filepath.FromSlash(u.Path))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", scenarios.ErrUnreachable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 16<<20))
}

// unwrapUnreachable is the transport error under the loader's wrapping.
func unwrapUnreachable(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, scenarios.ErrUnreachable.Error()+": "); i >= 0 {
		return msg[i+len(scenarios.ErrUnreachable.Error())+2:]
	}
	return msg
}

// analysis is one document being turned into a config.
type analysis struct {
	doc       *openapi3.T
	src       string
	keyHeader string
	// keyGuessed: the key header was found by its name, not given.
	keyGuessed bool
}

// operation is one selected operation of the document.
type operation struct {
	id, method, path string
	item             *openapi3.PathItem
	op               *openapi3.Operation
	keyParam         *openapi3.Parameter // nil: the operation does not declare the key header
}

var methodOrder = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodGet}

// all lists the document's operations in path order.
func (a *analysis) all() []operation {
	paths := a.doc.Paths.Keys()
	sort.Strings(paths)
	var out []operation
	for _, p := range paths {
		item := a.doc.Paths.Value(p)
		if item == nil {
			continue
		}
		for _, m := range methodOrder {
			if op := item.GetOperation(m); op != nil {
				out = append(out, operation{id: op.OperationID, method: m, path: p, item: item, op: op})
			}
		}
	}
	return out
}

// params are the operation's parameters, its own over its path's.
func params(o operation) []*openapi3.Parameter {
	byKey := map[string]*openapi3.Parameter{}
	var order []string
	for _, list := range []openapi3.Parameters{o.item.Parameters, o.op.Parameters} {
		for _, pr := range list {
			if pr == nil || pr.Value == nil {
				continue
			}
			k := pr.Value.In + " " + strings.ToLower(pr.Value.Name)
			if _, ok := byKey[k]; !ok {
				order = append(order, k)
			}
			byKey[k] = pr.Value
		}
	}
	out := make([]*openapi3.Parameter, len(order))
	for i, k := range order {
		out[i] = byKey[k]
	}
	return out
}

func headerParam(o operation, name string) *openapi3.Parameter {
	for _, p := range params(o) {
		if p.In == openapi3.ParameterInHeader && strings.EqualFold(p.Name, name) {
			return p
		}
	}
	return nil
}

// selectOperations picks the operations to write: the named ones, else
// those declaring the key header, else every POST and PATCH.
func (a *analysis) selectOperations(ids []string) ([]operation, error) {
	all := a.all()
	if a.keyHeader == "" {
		a.keyHeader = a.findKeyHeader(all)
	}
	for i := range all {
		all[i].keyParam = headerParam(all[i], a.keyHeader)
	}
	if len(ids) > 0 {
		var out []operation
		for _, id := range ids {
			i := indexOp(all, id)
			if i < 0 {
				known := make([]string, 0, len(all))
				for _, o := range all {
					if o.id != "" {
						known = append(known, o.id)
					}
				}
				return nil, fmt.Errorf("%w %s: --operation %q: no operation has this operationId (the document has: %s)",
					ErrDocument, a.src, id, strings.Join(known, ", "))
			}
			out = append(out, all[i])
		}
		return out, nil
	}
	var declaring, writes []operation
	for _, o := range all {
		if o.keyParam != nil {
			declaring = append(declaring, o)
		}
		if o.method == http.MethodPost || o.method == http.MethodPatch {
			writes = append(writes, o)
		}
	}
	if len(declaring) > 0 {
		return declaring, nil
	}
	if len(writes) == 0 {
		return nil, fmt.Errorf("%w %s: no operation declares the %s header and there is no POST or PATCH (name some with --operation)",
			ErrDocument, a.src, a.keyHeader)
	}
	return writes, nil
}

func indexOp(all []operation, id string) int {
	for i, o := range all {
		if o.id == id {
			return i
		}
	}
	return -1
}

// findKeyHeader is Idempotency-Key when an operation declares it, else
// the one header parameter named like an idempotency key.
func (a *analysis) findKeyHeader(all []operation) string {
	for _, o := range all {
		if headerParam(o, DefaultKeyHeader) != nil {
			return DefaultKeyHeader
		}
	}
	for _, o := range all {
		for _, p := range params(o) {
			if p.In == openapi3.ParameterInHeader && strings.Contains(strings.ToLower(p.Name), "idempotency") {
				a.keyGuessed = true
				return p.Name
			}
		}
	}
	return DefaultKeyHeader
}

// opName is the operation's name in the config: its operationId (made a
// slug when it holds characters case names and globs use), else the
// method and the last literal segment of its path.
func opName(o operation, seen map[string]bool) string {
	name := o.id
	if strings.ContainsAny(name, " \t*?[]{},@/") {
		name = slug(name)
	}
	if name == "" {
		name = slug(resource(o.path))
		if o.method != http.MethodPost || name == "" {
			name = strings.Trim(strings.ToLower(o.method)+"-"+name, "-")
		}
	}
	base := name
	for i := 2; seen[name]; i++ {
		name = base + "-" + strconv.Itoa(i)
	}
	seen[name] = true
	return name
}

// resource is the collection an operation creates in (/v1/orders: orders).
func resource(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		if !strings.HasPrefix(segs[i], "{") {
			return segs[i]
		}
	}
	return ""
}

// fillPath replaces path parameters by their examples (the parameter's,
// else its schema's), else by a value generated from their schema; gap
// names those placeholders.
func (a *analysis) fillPath(o operation) (path, gap string) {
	path = o.path
	var names, values []string
	for _, p := range params(o) {
		if p.In != openapi3.ParameterInPath || !strings.Contains(path, "{"+p.Name+"}") {
			continue
		}
		var s *openapi3.Schema
		if p.Schema != nil {
			s = p.Schema.Value
		}
		v, ok := p.Example, p.Example != nil
		for _, name := range sortedKeys(p.Examples) {
			if e := p.Examples[name]; !ok && e != nil && e.Value != nil && e.Value.Value != nil {
				v, ok = e.Value.Value, true
			}
		}
		if !ok {
			ok = s != nil && (s.Example != nil || len(s.Examples) > 0 || len(s.Enum) > 0)
			v = sample(s, 0)
			if !ok {
				names, values = append(names, p.Name), append(values, fmt.Sprint(v))
			}
		}
		path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(fmt.Sprint(v)))
	}
	switch len(names) {
	case 0:
		return path, ""
	case 1:
		return path, fmt.Sprintf("path parameter %s is a placeholder (%s): use an existing one", names[0], values[0])
	}
	return path, fmt.Sprintf("path parameters %s are placeholders (%s): use existing ones", strings.Join(names, ", "), strings.Join(values, ", "))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonMedia is the operation's JSON request body media type.
func jsonMedia(c openapi3.Content) (string, *openapi3.MediaType) {
	for _, mt := range sortedKeys(c) {
		if strings.Contains(strings.ToLower(mt), "json") && c[mt] != nil {
			return mt, c[mt]
		}
	}
	return "", nil
}

// body is the request body: from an example, else generated from the
// schema's required members; the note says which, and whether it
// validates.
type body struct {
	value  map[string]any
	schema *openapi3.Schema
	how    string // "from the example X" or "generated from ..."
	gap    string // a TODO, when the body could not be made valid
}

func (a *analysis) body(o operation) (*body, string) {
	if o.op.RequestBody == nil || o.op.RequestBody.Value == nil {
		if o.method == http.MethodPost || o.method == http.MethodPatch || o.method == http.MethodPut {
			return nil, "the document declares no request body"
		}
		return nil, ""
	}
	mt, media := jsonMedia(o.op.RequestBody.Value.Content)
	if media == nil {
		return nil, fmt.Sprintf("the request body is not JSON (%s): idemcheck sends JSON bodies", strings.Join(sortedKeys(o.op.RequestBody.Value.Content), ", "))
	}
	var s *openapi3.Schema
	if media.Schema != nil {
		s = media.Schema.Value
	}
	b := &body{schema: s}
	type example struct {
		v   any
		how string
	}
	var examples []example
	if media.Example != nil {
		examples = append(examples, example{media.Example, "the " + mt + " example"})
	}
	for _, name := range sortedKeys(media.Examples) {
		if e := media.Examples[name]; e != nil && e.Value != nil && e.Value.Value != nil {
			examples = append(examples, example{e.Value.Value, fmt.Sprintf("the example %q", name)})
		}
	}
	if s != nil && s.Example != nil {
		examples = append(examples, example{s.Example, "the schema's example"})
	}
	if s != nil && len(s.Examples) > 0 {
		examples = append(examples, example{s.Examples[0], "the schema's first example"})
	}
	for _, e := range examples {
		m, ok := e.v.(map[string]any)
		if !ok {
			continue
		}
		b.value, b.how = m, "from "+e.how
		if s != nil {
			if err := validate(a.doc, s, m); err != nil {
				b.gap = "the example does not validate against the schema: " + err.Error()
			}
		}
		return b, ""
	}
	if s == nil {
		return nil, "the request body has no schema and no example"
	}
	v, ok := sample(s, 0).(map[string]any)
	if !ok {
		return nil, "the request body is not a JSON object: idemcheck needs an object (mutations are merge patches)"
	}
	b.value, b.how = v, "guessed: generated from the schema's required members"
	if err := validate(a.doc, s, v); err != nil {
		b.gap = "the generated body does not validate against the schema: " + err.Error()
	}
	return b, ""
}

// mutation is a changed member, valid against the schema.
type mutation struct {
	name  string
	patch map[string]any
}

// mutations change up to two required members (one at a time), else add
// an optional one; each patched body validates.
func (a *analysis) mutations(b *body) []mutation {
	if b == nil {
		return nil
	}
	var f flat
	if b.schema != nil {
		f = flatten(b.schema)
	}
	var out []mutation
	members := sortedKeys(b.value)
	if len(f.required) > 0 {
		members = f.required
	}
	for _, name := range members {
		v, ok := b.value[name]
		if !ok {
			continue
		}
		// A free-form string reads better with a suffix; the schema (a
		// pattern, a length) may only allow a same-shaped one.
		var candidates []any
		if sv, ok := v.(string); ok && sv != "" && (f.properties[name] == nil || f.properties[name].Format == "") {
			candidates = append(candidates, sv+"-2")
		}
		if nv, ok := changed(f.properties[name], v); ok {
			candidates = append(candidates, nv)
		}
		for _, nv := range candidates {
			patch := map[string]any{name: nv}
			if a.validPatch(b, patch) {
				out = append(out, mutation{"changed-" + slug(name), patch})
				break
			}
		}
		if len(out) == 2 {
			return out
		}
	}
	for _, name := range sortedKeys(f.properties) {
		p := f.properties[name]
		if _, ok := b.value[name]; ok || p.ReadOnly {
			continue
		}
		patch := map[string]any{name: sample(p, 1)}
		if a.validPatch(b, patch) {
			return append(out, mutation{"added-" + slug(name), patch})
		}
	}
	return out
}

func (a *analysis) validPatch(b *body, patch map[string]any) bool {
	if b.schema == nil {
		return true
	}
	merged := map[string]any{}
	for k, v := range b.value {
		merged[k] = v
	}
	for k, v := range patch {
		merged[k] = v
	}
	return validate(a.doc, b.schema, merged) == nil
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// invalid is a patch that breaks the type of a required member, for the
// invalid variant, when the document declares a 400 or 422 answer.
func (a *analysis) invalid(o operation, b *body) (map[string]any, int, string) {
	if b == nil || b.schema == nil || o.op.Responses == nil {
		return nil, 0, ""
	}
	// The status is kept only when the document leaves no choice: with
	// both 400 and 422 declared, any 4xx will do.
	var declared []int
	for _, s := range []int{400, 422} {
		if o.op.Responses.Status(s) != nil {
			declared = append(declared, s)
		}
	}
	if len(declared) == 0 {
		return nil, 0, ""
	}
	status := declared[0]
	if len(declared) > 1 {
		status = 0
	}
	f := flatten(b.schema)
	for _, name := range f.required {
		p := f.properties[name]
		if p == nil {
			continue
		}
		var bad any
		switch typeOf(p) {
		case "integer", "number":
			bad = "not-a-number"
		case "boolean":
			bad = "not-a-boolean"
		case "string":
			bad = 12345
		default:
			continue
		}
		patch := map[string]any{name: bad}
		if !a.validPatch(b, patch) {
			return patch, status, fmt.Sprintf("%s of the wrong type; the document declares %s", name, joinInts(declared, " and "))
		}
	}
	return nil, 0, ""
}

func joinInts(ns []int, sep string) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}

// success is the operation's success response: 201, 200, 202, then any
// other 2xx.
func success(o operation) (int, *openapi3.Response) {
	if o.op.Responses == nil {
		return 0, nil
	}
	for _, code := range []int{201, 200, 202} {
		if r := o.op.Responses.Status(code); r != nil && r.Value != nil {
			return code, r.Value
		}
	}
	for _, k := range o.op.Responses.Keys() {
		if code, err := strconv.Atoi(k); err == nil && code >= 200 && code < 300 {
			if r := o.op.Responses.Value(k); r != nil && r.Value != nil {
				return code, r.Value
			}
		}
	}
	return 0, nil
}

func responseSchema(r *openapi3.Response) *openapi3.Schema {
	if r == nil {
		return nil
	}
	if _, m := jsonMedia(r.Content); m != nil && m.Schema != nil {
		return m.Schema.Value
	}
	return nil
}

// listEndpoint is a GET on the operation's own collection path answering
// an array (or an object with an array member): a list oracle.
func (a *analysis) listEndpoint(o operation) (path, array string, item *openapi3.Schema, ok bool) {
	if o.method != http.MethodPost || o.item.Get == nil {
		return "", "", nil, false
	}
	_, r := success(operation{op: o.item.Get})
	array, item, ok = arrayMember(responseSchema(r))
	return o.path, array, item, ok
}

// ttl is the retention the document declares: x-idempotency-ttl on the
// key parameter, the operation or the document, else a duration in the
// key parameter's description.
func (a *analysis) ttl(ops []operation) (time.Duration, string) {
	for _, o := range ops {
		if o.keyParam != nil {
			if d, ok := durationExt(o.keyParam.Extensions); ok {
				return d, "from x-idempotency-ttl of the " + o.keyParam.Name + " parameter"
			}
		}
		if d, ok := durationExt(o.op.Extensions); ok {
			return d, "from x-idempotency-ttl of " + o.method + " " + o.path
		}
	}
	if d, ok := durationExt(a.doc.Extensions); ok {
		return d, "from the document's x-idempotency-ttl"
	}
	for _, o := range ops {
		if o.keyParam == nil {
			continue
		}
		if d, text, ok := durationIn(o.keyParam.Description); ok {
			return d, fmt.Sprintf("guessed: from the %s parameter's description (%q)", o.keyParam.Name, text)
		}
	}
	return 0, ""
}

func durationExt(ext map[string]any) (time.Duration, bool) {
	v, ok := ext["x-idempotency-ttl"]
	if !ok {
		return 0, false
	}
	switch x := v.(type) {
	case float64:
		return time.Duration(x * float64(time.Second)), x > 0
	case int:
		return time.Duration(x) * time.Second, x > 0
	case string:
		if d, err := time.ParseDuration(x); err == nil && d > 0 {
			return d, true
		}
		if d, _, ok := durationIn(x); ok {
			return d, true
		}
	}
	return 0, false
}

// durationRE finds "24 hours", "30s", "7 days", "PT24H"-free prose.
var durationRE = regexp.MustCompile(`(?i)\b(\d+)\s*(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\b`)

func durationIn(text string) (time.Duration, string, bool) {
	m := durationRE.FindStringSubmatch(text)
	if m == nil {
		return 0, "", false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 {
		return 0, "", false
	}
	unit := strings.ToLower(m[2])
	var d time.Duration
	switch {
	case strings.HasPrefix(unit, "ms"), strings.HasPrefix(unit, "milli"):
		d = time.Millisecond
	case strings.HasPrefix(unit, "s"):
		d = time.Second
	case strings.HasPrefix(unit, "m"):
		d = time.Minute
	case strings.HasPrefix(unit, "h"):
		d = time.Hour
	default:
		d = 24 * time.Hour
	}
	return time.Duration(n) * d, m[0], true
}

// rawRE finds a description saying the key is sent without quotes.
var rawRE = regexp.MustCompile(`\b(sent as is|as-is|bare|unquoted|without quotes|raw)\b`)

// keySyntax reads the key's syntax from the key parameter: an example in
// double quotes, or a description naming a structured field, is an
// sf-string; an example without quotes is raw; else the draft's sf-string.
func keySyntax(p *openapi3.Parameter) (scenarios.KeySyntax, string) {
	if p == nil {
		return scenarios.SFString, "guessed: the draft's syntax (\"key\"); use raw if the API wants the bare key"
	}
	ex := p.Example
	if ex == nil {
		for _, name := range sortedKeys(p.Examples) {
			if e := p.Examples[name]; e != nil && e.Value != nil && e.Value.Value != nil {
				ex = e.Value.Value
				break
			}
		}
	}
	if ex == nil && p.Schema != nil && p.Schema.Value != nil {
		ex = p.Schema.Value.Example
	}
	if s, ok := ex.(string); ok && s != "" {
		if strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`) {
			return scenarios.SFString, fmt.Sprintf("from the %s example %s (quoted: an sf-string)", p.Name, s)
		}
		return scenarios.Raw, fmt.Sprintf("from the %s example %s (bare)", p.Name, s)
	}
	d := strings.ToLower(p.Description)
	if m := rawRE.FindString(d); m != "" {
		return scenarios.Raw, fmt.Sprintf("from the %s parameter's description (%q)", p.Name, m)
	}
	if strings.Contains(d, "structured field") || strings.Contains(d, "sf-string") || strings.Contains(d, "rfc 8941") || strings.Contains(d, "rfc 9651") {
		return scenarios.SFString, "from the " + p.Name + " parameter's description (a structured-field string)"
	}
	return scenarios.SFString, "guessed: the draft's syntax (\"key\"); use raw if the API wants the bare key"
}

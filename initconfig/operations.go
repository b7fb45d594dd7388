package initconfig

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

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
		v, ok := paramValue(p)
		if !ok {
			names, values = append(names, p.Name), append(values, fmt.Sprint(v))
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

// paramValue is a value of parameter p: its example (the parameter's,
// else its schema's, else an enum member), else one generated from its
// schema (declared false).
func paramValue(p *openapi3.Parameter) (v any, declared bool) {
	v, ok := p.Example, p.Example != nil
	for _, name := range sortedKeys(p.Examples) {
		if e := p.Examples[name]; !ok && e != nil && e.Value != nil && e.Value.Value != nil {
			v, ok = e.Value.Value, true
		}
	}
	if ok {
		return v, true
	}
	s := paramSchema(p)
	return sample(s, 0), s != nil && (s.Example != nil || len(s.Examples) > 0 || len(s.Enum) > 0)
}

func paramSchema(p *openapi3.Parameter) *openapi3.Schema {
	if p.Schema != nil {
		return p.Schema.Value
	}
	return nil
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

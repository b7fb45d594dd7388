package initconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"go.yaml.in/yaml/v3"
)

// GraphQLOptions is what init --graphql reads.
type GraphQLOptions struct {
	// Schema is a file holding the API's schema: SDL, or the JSON answer
	// to the introspection query ({"data": {"__schema": ...}}).
	Schema string
	// URL is the API's endpoint (https://shop.example.com/admin/api/graphql.json).
	URL string
	// Mutations, when set, are the mutations to write; else every one
	// whose key the schema shows (a key directive, or a key argument or
	// input field).
	Mutations []string
	Command   string
}

// keyNameRe is an argument or input field that holds an idempotency key.
var keyNameRe = regexp.MustCompile(`(?i)^(idempotency_?key|idempotent_?key|client_?request_?id|request_?id|unique_?token)$`)

// maxGraphQLOps bounds the mutations written when the schema's key
// directive applies to all (Shopify's schema declares @idempotent once,
// not per mutation).
const maxGraphQLOps = 5

// FromGraphQL writes a config for the mutations of a GraphQL schema that
// carry a key: Shopify's @idempotent(key:) directive (any directive whose
// name says idempotent, with a String argument, on FIELD), or an
// argument or input field named like a key.
func FromGraphQL(o GraphQLOptions) ([]byte, error) {
	raw, err := os.ReadFile(o.Schema)
	if err != nil {
		return nil, fmt.Errorf("--graphql-schema %s: %v", o.Schema, err)
	}
	sdl := string(raw)
	if strings.HasPrefix(strings.TrimSpace(sdl), "{") {
		if sdl, err = introspectionSDL(raw); err != nil {
			return nil, fmt.Errorf("--graphql-schema %s: %v", o.Schema, err)
		}
	}
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: o.Schema, Input: sdl})
	if err != nil {
		return nil, fmt.Errorf("--graphql-schema %s: %s", o.Schema, singleLine(err.Error()))
	}
	if schema.Mutation == nil {
		return nil, fmt.Errorf("--graphql-schema %s: no Mutation type: nothing takes a key", o.Schema)
	}
	dir, arg := keyDirective(schema)
	type pick struct {
		f       *ast.FieldDefinition
		pointer string
	}
	var picks, others []pick
	for _, f := range schema.Mutation.Fields {
		if len(o.Mutations) > 0 && !contains(o.Mutations, f.Name) {
			continue
		}
		p := pick{f: f, pointer: keyPointer(schema, f)}
		switch {
		case dir != "" && p.pointer == "":
			picks = append(picks, p)
		case dir == "" && p.pointer != "":
			picks = append(picks, p)
		case p.pointer != "":
			others = append(others, p)
		}
	}
	if len(picks) == 0 {
		return nil, fmt.Errorf("--graphql-schema %s: no mutation carries a key (a directive named idempotent, or an argument or input field named idempotencyKey)%s", o.Schema, namesHint(o.Mutations))
	}
	var head []string
	if dir != "" && len(picks) > maxGraphQLOps && len(o.Mutations) == 0 {
		var left []string
		for _, p := range picks[maxGraphQLOps:] {
			left = append(left, p.f.Name)
		}
		head = append(head, fmt.Sprintf("TODO: @%s applies to any mutation; the first %d are written, the schema does not say which require it: choose with --mutation (left: %s).",
			dir, maxGraphQLOps, shortList(left)))
		picks = picks[:maxGraphQLOps]
	}
	// One key place per config: the directive's, or the first pointer's.
	key := flowMapping()
	keyWhy := ""
	if dir != "" {
		key.set("directive", str(dir))
		if arg != "key" {
			key.set("argument", str(arg))
		}
		keyWhy = fmt.Sprintf("the schema declares directive @%s(%s: String) on FIELD (Shopify's form)", dir, arg)
	} else {
		key.set("pointer", str(picks[0].pointer))
		keyWhy = fmt.Sprintf("%s's variables hold the key at %s", picks[0].f.Name, picks[0].pointer)
		var kept []pick
		for _, p := range picks {
			if p.pointer == picks[0].pointer {
				kept = append(kept, p)
			} else {
				head = append(head, fmt.Sprintf("TODO: %s keeps its key at %s: one config holds one key place; write another with --mutation %s.", p.f.Name, p.pointer, p.f.Name))
			}
		}
		picks = kept
	}
	for _, p := range others {
		head = append(head, fmt.Sprintf("TODO: %s also has a key field at %s; the directive is used.", p.f.Name, p.pointer))
	}
	root := newMapping()
	root.set("base_url", fromOrTodoStr(o.URL, "from --graphql-url", "the API's origin (https://shop.example.com); each operation's path is its endpoint"))
	root.set("carrier", from(str("graphql"), "a GraphQL API: POST {query, variables}; answers read from data, errors and userErrors"))
	root.set("key", from(key.n, keyWhy))
	root.set("ttl", todo(str("24h"), "how long the API keeps a key (Shopify does not publish it); enables the expiry cases"))
	pr := sequence()
	for n := 1; n <= 2; n++ {
		m := newMapping()
		m.set("name", str(fmt.Sprintf("user%d", n)))
		h := newMapping()
		h.set("Authorization", todo(str(fmt.Sprintf("Bearer ${%s}", tokenVar(n))), fmt.Sprintf("export %s (the second: another user's, for the scope cases)", tokenVar(n))))
		m.set("headers", h.n)
		pr.Content = append(pr.Content, m.n)
	}
	root.set("principals", pr)
	ans := newMapping()
	ans.set("mismatch", todo(sequence(str("IDEMPOTENCY_KEY_PARAMETER_MISMATCH")), "the extensions.code or userErrors code of a reused key with other variables (Shopify's, as its docs give it)"))
	ans.set("in_flight", todo(sequence(str("IDEMPOTENCY_CONCURRENT_REQUEST")), "the code of a duplicate still in flight"))
	ans.set("missing", todo(emptySequence(), "the code of a mutation sent without its key (empty: any error)"))
	root.set("answers", ans.n)
	foot(root.n.Content[len(root.n.Content)-2], "oracle: {url: \"/effects?key={key}\", pointer: /executions}  # TODO: how executions are counted (docs/oracles.md)")
	ops := sequence()
	for _, p := range picks {
		ops.Content = append(ops.Content, graphQLOperation(schema, p.f, p.pointer))
	}
	root.set("operations", ops)
	prof := newMapping()
	preset := "lenient"
	if dir == "idempotent" {
		preset = "shopify"
	}
	prof.set("preset", guessed(str(preset), map[string]string{"shopify": "the @idempotent directive is Shopify's", "lenient": "no document of this API's rules was read"}[preset]))
	root.set("profile", prof.n)
	lines := append([]string{
		fmt.Sprintf("idemcheck config written by `%s` from %s on %s.", o.Command, o.Schema, time.Now().UTC().Format("2006-01-02")),
		`Every value says where it came from; check each "guessed:" and fill each "TODO:" (docs/carriers.md).`,
		"Then: idemcheck list --config FILE (what would run), idemcheck run --config FILE.",
	}, head...)
	return render(root, lines)
}

// keyDirective is the schema's key directive and its String argument
// ("" when it declares none).
func keyDirective(s *ast.Schema) (name, arg string) {
	names := make([]string, 0, len(s.Directives))
	for n := range s.Directives {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := s.Directives[n]
		if !strings.Contains(strings.ToLower(n), "idempoten") || !contains(locations(d), string(ast.LocationField)) {
			continue
		}
		for _, a := range d.Arguments {
			if a.Type.Name() == "String" || a.Type.Name() == "ID" {
				return n, a.Name
			}
		}
	}
	return "", ""
}

func locations(d *ast.DirectiveDefinition) []string {
	out := make([]string, len(d.Locations))
	for i, l := range d.Locations {
		out[i] = string(l)
	}
	return out
}

// keyPointer is where f's variables hold a key: an argument named like
// one (/idempotencyKey) or a field of an input argument (/input/idempotencyKey).
func keyPointer(s *ast.Schema, f *ast.FieldDefinition) string {
	for _, a := range f.Arguments {
		if keyNameRe.MatchString(a.Name) {
			return "/" + a.Name
		}
	}
	for _, a := range f.Arguments {
		if in := s.Types[a.Type.Name()]; in != nil && in.Kind == ast.InputObject {
			for _, field := range in.Fields {
				if keyNameRe.MatchString(field.Name) {
					return "/" + a.Name + "/" + field.Name
				}
			}
		}
	}
	return ""
}

// graphQLOperation is the operations[] entry of mutation f: its document
// (every argument a variable), variables with a value for each required
// input, and the id pointer when the payload shows one.
func graphQLOperation(s *ast.Schema, f *ast.FieldDefinition, keyPtr string) *yaml.Node {
	var defs, args []string
	vars := map[string]any{}
	for _, a := range f.Arguments {
		defs = append(defs, fmt.Sprintf("$%s: %s", a.Name, a.Type.String()))
		args = append(args, fmt.Sprintf("%s: $%s", a.Name, a.Name))
		if a.Type.NonNull && "/"+a.Name != keyPtr {
			vars[a.Name] = sampleValue(s, a.Type, strings.TrimPrefix(keyPtr, "/"+a.Name+"/"), 0)
		}
	}
	sel, idPath := gqlSelection(s, s.Types[f.Type.Name()], 0)
	doc := "mutation " + upperFirst(f.Name)
	if len(defs) > 0 {
		doc += "(" + strings.Join(defs, ", ") + ")"
	}
	doc += " {\n  " + f.Name
	if len(args) > 0 {
		doc += "(" + strings.Join(args, ", ") + ")"
	}
	doc += sel + "\n}\n"
	m := newMapping()
	m.set("name", str(f.Name))
	m.set("path", todo(str("/graphql"), "the endpoint's path (Shopify: /admin/api/VERSION/graphql.json)"))
	q := str(doc)
	q.Style = yaml.LiteralStyle
	m.set("query", from(q, "every argument a variable; the selection: the payload's scalar fields"))
	b, _ := json.Marshal(vars)
	var bodyNode yaml.Node
	_ = yaml.Unmarshal(b, &bodyNode)
	body := bodyNode.Content[0]
	body.Style = yaml.FlowStyle
	m.set("body", todo(body, "the variables of a normal, successful call (each required input has a placeholder)"))
	if idPath != "" {
		m.set("id_pointer", guessed(str("/data/"+f.Name+idPath), "the payload's first id field"))
	} else {
		m.set("id_pointer", todo(str(""), "where the created resource's id is, under /data/"+f.Name))
	}
	foot(m.n.Content[len(m.n.Content)-2], "variants: {slow: ..., business_error: ..., transient_error: ..., invalid: ...}  # TODO: variables that make the call slow or fail (docs/config.md)")
	return m.n
}

// gqlSelection is the selection set of type t: its scalar fields, and one
// level of object fields' scalar fields; idPath is the pointer to the
// first id found (/refund/id).
func gqlSelection(s *ast.Schema, t *ast.Definition, depth int) (sel, idPath string) {
	if t == nil || (t.Kind != ast.Object && t.Kind != ast.Interface) {
		return "", ""
	}
	var parts []string
	for _, f := range t.Fields {
		if strings.HasPrefix(f.Name, "__") || hasRequiredArg(f) {
			continue
		}
		ft := s.Types[f.Type.Name()]
		switch {
		case ft == nil:
		case ft.Kind == ast.Scalar || ft.Kind == ast.Enum:
			parts = append(parts, f.Name)
			if f.Name == "id" && idPath == "" {
				idPath = "/id"
			}
		case depth < 2 && (ft.Kind == ast.Object || ft.Kind == ast.Interface):
			sub, id := gqlSelection(s, ft, depth+1)
			if sub == "" {
				continue
			}
			parts = append(parts, f.Name+sub)
			if id != "" && idPath == "" && f.Type.Elem == nil {
				idPath = "/" + f.Name + id
			}
		}
	}
	if len(parts) == 0 {
		return "", ""
	}
	indent := strings.Repeat("  ", depth+2)
	return " {\n" + indent + strings.Join(parts, "\n"+indent) + "\n" + strings.Repeat("  ", depth+1) + "}", idPath
}

func hasRequiredArg(f *ast.FieldDefinition) bool {
	for _, a := range f.Arguments {
		if a.Type.NonNull && a.DefaultValue == nil {
			return true
		}
	}
	return false
}

// sampleValue is a placeholder of type t: required input fields filled,
// the key field (skip) left for the suite to set.
func sampleValue(s *ast.Schema, t *ast.Type, skip string, depth int) any {
	if t.Elem != nil {
		return []any{sampleValue(s, t.Elem, skip, depth+1)}
	}
	switch t.Name() {
	case "Int":
		return 1
	case "Float":
		return 1.5
	case "Boolean":
		return true
	case "String", "ID":
		return "idemcheck"
	}
	d := s.Types[t.Name()]
	switch {
	case d == nil:
		return "idemcheck"
	case d.Kind == ast.Enum && len(d.EnumValues) > 0:
		return d.EnumValues[0].Name
	case d.Kind == ast.InputObject && depth < 4:
		out := map[string]any{}
		for _, f := range d.Fields {
			if f.Name != skip && f.Type.NonNull && f.DefaultValue == nil {
				out[f.Name] = sampleValue(s, f.Type, "", depth+1)
			}
		}
		return out
	}
	return "idemcheck"
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func shortList(names []string) string {
	if len(names) > 8 {
		return strings.Join(names[:8], ", ") + fmt.Sprintf(" and %d more", len(names)-8)
	}
	return strings.Join(names, ", ")
}

func namesHint(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return " among --mutation " + strings.Join(names, ", ")
}

// fromOrTodoStr is value v noted where it came from, or a TODO when empty.
func fromOrTodoStr(v, where, what string) *yaml.Node {
	if v == "" {
		return todo(str("https://api.example.com"), what)
	}
	return from(str(v), where)
}

// emptySequence is [] written in flow style (a block one has no form).
func emptySequence() *yaml.Node {
	n := sequence()
	n.Style = yaml.FlowStyle
	return n
}

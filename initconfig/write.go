package initconfig

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/idemcheck/idemcheck/apispec"
	"go.yaml.in/yaml/v3"
)

// evidenceDoc is where the commented evidence options are explained.
const evidenceDoc = "docs/evidence.md"

// tokenVar is the environment variable holding principal n's secret.
func tokenVar(n int) string { return fmt.Sprintf("IDEMCHECK_TOKEN_%d", n) }

// write assembles the config of the selected operations.
func (a *analysis) write(ops []operation, command string) ([]byte, error) {
	root := newMapping()
	title := ""
	if a.doc.Info != nil {
		title = fmt.Sprintf(" (%q %s)", a.doc.Info.Title, a.doc.Info.Version)
	}
	headLines := []string{
		fmt.Sprintf("idemcheck config written by `%s` from %s, OpenAPI %s%s.", command, a.src, a.doc.OpenAPI, title),
		`Every value says where it came from; check each "guessed:" and fill each "TODO:".`,
		"Then: idemcheck list --config FILE (what would run), idemcheck run --config FILE.",
	}

	base, baseNote, baseGap := a.baseURL()
	root.set("base_url", fromOrTodo(str(base), baseNote, baseGap))

	var keyParam *openapi3.Parameter
	var keyOp operation
	for _, o := range ops {
		if o.keyParam != nil {
			keyParam, keyOp = o.keyParam, o
			break
		}
	}
	kh := str(a.keyHeader)
	switch {
	case keyParam == nil:
		todo(kh, fmt.Sprintf("no selected operation declares the %s header parameter: name the header the API reads", a.keyHeader))
	case a.keyGuessed:
		guessed(kh, "the header parameter named like an idempotency key")
	default:
		from(kh, "the header parameter of "+opLabel(keyOp))
	}
	root.set("key_header", kh)
	syntax, syntaxWhy := keySyntax(keyParam)
	root.set("key_syntax", fromOrGuess(str(string(syntax)), syntaxWhy))
	tk := root.set("timeout", str("10s"))
	if d, why := a.ttl(ops); d > 0 {
		root.set("ttl", fromOrGuess(str(shortDuration(d)), why))
	} else {
		foot(tk, "ttl: 24h  # TODO: how long the API keeps a key (the document declares no x-idempotency-ttl); enables the expiry cases")
	}

	principals, secHead := a.principals(ops)
	pk := root.set("principals", principals)
	head(pk, secHead...)

	if url, ptr, why := a.counter(); url != "" {
		o := newMapping()
		o.set("url", str(url))
		o.set("pointer", str(ptr))
		o.set("principal", value(0))
		head(root.set("oracle", o.n), "From "+why+": it counts the API's executions.")
	} else {
		a.evidenceComments(pk, ops)
	}

	opsNode := sequence()
	seen := map[string]bool{}
	var notes []string
	taken := idempotencyStatuses(ops)
	for _, o := range ops {
		item, opNotes := a.operationNode(o, seen, taken)
		opsNode.Content = append(opsNode.Content, item.n)
		notes = append(notes, opNotes...)
	}
	ok := root.set("operations", opsNode)
	if keyParam == nil && len(ops) > 0 {
		head(ok, fmt.Sprintf("TODO: no operation declares the %s header: these are every POST and PATCH; keep those that take a key.", a.keyHeader))
	}

	prof := newMapping()
	prof.set("preset", str(apispec.DefaultProfile))
	ov := a.overrides(ops, keyParam, syntax)
	if len(ov.n.Content) > 0 {
		prof.set("overrides", ov.n)
	}
	footOpenFields(prof, apispec.DefaultProfile, ov)
	pk = root.set("profile", prof.n)
	head(pk, "The draft's expectations (422 on a changed body, 409 in flight, 400 without a key); override what the API documents otherwise.")
	if len(notes) > 0 {
		headLines = append(headLines, notes...)
	}
	return render(root, headLines)
}

func fromOrTodo(n *yaml.Node, note, gap string) *yaml.Node {
	if gap != "" {
		return todo(n, gap)
	}
	return from(n, note)
}

// fromOrGuess writes why as is when it already says "guessed:".
func fromOrGuess(n *yaml.Node, why string) *yaml.Node {
	if rest, ok := strings.CutPrefix(why, "guessed: "); ok {
		return guessed(n, rest)
	}
	return from(n, why)
}

func opLabel(o operation) string {
	if o.id != "" {
		return o.id
	}
	return o.method + " " + o.path
}

// serverVar matches {name} in a server URL.
var serverVar = regexp.MustCompile(`\{([^}]+)\}`)

// baseURL is the first absolute server URL (variables at their defaults).
func (a *analysis) baseURL() (base, note, gap string) {
	const fallback = "http://127.0.0.1:8080"
	for i, s := range a.doc.Servers {
		if s == nil {
			continue
		}
		u := serverVar.ReplaceAllStringFunc(s.URL, func(m string) string {
			if v, ok := s.Variables[m[1:len(m)-1]]; ok && v != nil {
				return v.Default
			}
			return m
		})
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || strings.Contains(u, "{") {
			continue
		}
		note = fmt.Sprintf("from servers[%d]", i)
		if len(a.doc.Servers) > 1 {
			note += fmt.Sprintf(" (%d servers; --base-url picks another)", len(a.doc.Servers))
		}
		return strings.TrimRight(u, "/"), note, ""
	}
	if len(a.doc.Servers) > 0 && a.doc.Servers[0] != nil {
		rel := a.doc.Servers[0].URL
		if strings.HasPrefix(rel, "/") && !strings.Contains(rel, "{") {
			return fallback + strings.TrimRight(rel, "/"), "", fmt.Sprintf("the API's host (servers[0] is the relative %q)", rel)
		}
		return fallback, "", fmt.Sprintf("the API's absolute URL (servers[0] is %q)", rel)
	}
	return fallback, "", "the API's base URL (the document has no servers entry)"
}

// operationNode writes one operation; notes are TODOs for the file head.
// taken are the statuses the profile gives an idempotency meaning.
func (a *analysis) operationNode(o operation, seen map[string]bool, taken map[int]string) (mapping, []string) {
	m := newMapping()
	name := opName(o, seen)
	nn := str(name)
	if o.id != "" && o.id != name {
		from(nn, "operationId "+o.id)
	}
	m.set("name", nn)
	m.set("method", str(o.method))
	setup, hasSetup := a.proposeSetup(o)
	bound := o
	if hasSetup {
		bound.path = setup.path // the resource's id comes from the setup's answer
	}
	path, gap := a.fillPath(bound)
	query, fields, paramMuts := a.requestParams(o)
	pn := str(withQuery(path, query))
	if gap != "" {
		todo(pn, gap)
	}
	m.set("path", pn)
	if hasSetup && updatesResource(o, setup) {
		m.set("kind", guessed(str("update"), "it changes the resource its path names: every answer names that one, so ids are no evidence; add version_pointer (its revision member) or an oracle to count executions"))
	}

	b, bodyGap := a.body(o)
	if b != nil || len(fields) > 0 {
		hs := flowMapping()
		if b != nil {
			hs.set("Content-Type", str(b.mediaType))
		}
		for _, f := range fields {
			hs.set(f[0], quoted(f[1]))
		}
		m.set("headers", hs.n)
	}
	if b != nil {
		bn := fromOrGuess(value(b.value), b.how)
		if b.gap != "" {
			todo(bn, b.gap)
		}
		m.set("body", bn)
	}
	if hasSetup {
		m.set("setup", a.setupNode(setup).n)
	}
	var notes []string
	if bodyGap != "" {
		notes = append(notes, fmt.Sprintf("TODO: %s: %s.", name, bodyGap))
	}

	code, resp := success(o)
	ptr, why := idMember(responseSchema(resp), resource(o.path))
	var idLine []string // a commented id_pointer, when the guess is weak
	switch src := fmt.Sprintf("%s in the %d response", why, code); {
	case ptr != "" && sharesID(o):
		idLine = sharedIDLines(ptr, fmt.Sprintf("(%s) names the resource %s %s acts on, the same in every answer", src, o.method, o.path), "idempotency_key")
	case ptr != "" && strings.HasPrefix(why, "marked"):
		m.set("id_pointer", from(str(ptr), src))
	case ptr != "" && strings.HasPrefix(why, "a member named *_id"):
		// Often another resource's id (a customer_id): a wrong pointer
		// stops a run at its start, so the user confirms it.
		idLine = []string{fmt.Sprintf("id_pointer: %s  # TODO: %s; uncomment if it is", ptr, src)}
	case ptr != "":
		m.set("id_pointer", guessed(str(ptr), src))
	default:
		notes = append(notes, fmt.Sprintf("TODO: %s: no id member in the success response's schema: set id_pointer (e.g. /id) to the created resource's id.", name))
	}
	commented := idLine // commented config put before mutations or variants
	if mk := markerMember(bodySchema(b)); mk != "" {
		commented = append(commented, fmt.Sprintf("marker: %s  # TODO: with downstream:, idemcheck writes a token per key here for the double to find (%s)", mk, evidenceDoc))
	}

	muts := a.mutations(b)
	if len(muts) > 0 || len(paramMuts) > 0 {
		seq := mutationsNode(muts, paramMuts)
		head(m.set("mutations", seq), commented...)
		commented = nil
	}
	if len(muts) == 0 && b != nil {
		notes = append(notes, fmt.Sprintf("TODO: %s: no member to change: add mutations (a materially different body) for the mismatch cases.", name))
	}

	variants := newMapping()
	if patch, status, why, gap := a.invalid(o, b, taken); patch != nil {
		v := flowMapping()
		v.set("patch", value(patch))
		if status != 0 {
			v.set("status", value(status))
		}
		guessed(v.n, why)
		if gap != "" {
			todo(v.n, gap)
		}
		variants.set(apispec.VariantInvalid, v.n)
	}
	prose, lines := a.variantTODOs(o)
	if len(variants.n.Content) > 0 {
		// Under the written variants: the commented ones are its siblings.
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(l, "  ")
		}
		head(m.set("variants", variants.n), commented...)
		foot(variants.n.Content[len(variants.n.Content)-2], append(prose, lines...)...)
	} else {
		foot(m.n.Content[len(m.n.Content)-2], append(append(append(commented, prose...), "variants:"), lines...)...)
	}
	return m, notes
}

// sharesID reports an operation on an existing resource, whose answers
// all carry that resource's id: an update (PATCH, PUT) or a request on a
// path ending in the resource's own parameter.
func sharesID(o operation) bool {
	return o.method == "PATCH" || o.method == "PUT" || strings.HasSuffix(o.path, "}")
}

// mutationsNode is the mutations sequence init writes: each changed body
// member, then each query or header parameter's other value, named
// uniquely.
func mutationsNode(muts []mutation, paramMuts []paramMutation) *yaml.Node {
	seq := sequence()
	names := map[string]bool{}
	for _, mu := range muts {
		mm := flowMapping()
		mm.set("name", str(mu.name))
		names[mu.name] = true
		mm.set("patch", value(mu.patch))
		what := "a changed member"
		if strings.HasPrefix(mu.name, "added-") {
			what = "an added member"
		}
		guessed(mm.n, what+", still valid against the schema")
		seq.Content = append(seq.Content, mm.n)
	}
	for _, pm := range paramMuts {
		mm := flowMapping()
		n := pm.name
		for i := 2; names[n]; i++ {
			n = fmt.Sprintf("%s-%d", pm.name, i)
		}
		names[n] = true
		mm.set("name", str(n))
		field := flowMapping()
		field.set(pm.param, quoted(pm.value))
		key := "query"
		if pm.in == openapi3.ParameterInHeader {
			key = "headers"
		}
		mm.set(key, field.n)
		guessed(mm.n, pm.why+": part of what the request asks for")
		seq.Content = append(seq.Content, mm.n)
	}
	return seq
}

func bodySchema(b *body) *openapi3.Schema {
	if b == nil {
		return nil
	}
	return b.schema
}

// overrides are the profile fields the document states: the statuses
// its responses' descriptions give to a changed body and to a key in
// flight, and what the key parameter's schema says of the key.
func (a *analysis) overrides(ops []operation, p *openapi3.Parameter, syntax apispec.KeySyntax) mapping {
	m := newMapping()
	if syntax == apispec.Raw {
		m.set("key_syntax", from(str(string(syntax)), "as key_syntax above"))
	}
	for _, field := range describedFields {
		if code, where := describedStatus(ops, field.re); code != 0 {
			m.set(field.name, guessed(value([]int{code}), where))
		}
	}
	if p == nil || p.Schema == nil || p.Schema.Value == nil {
		return m
	}
	s := p.Schema.Value
	// The schema describes the header's value: an sf-string's two quotes
	// count in its lengths, never in the key's (key_max_len). A uuid
	// format describes the key itself (see keySyntax).
	quotes, less := 0, ""
	if syntax == apispec.SFString && s.Format != "uuid" {
		quotes, less = 2, " less the sf-string's two quotes"
	}
	if s.MaxLength != nil && int(*s.MaxLength) > quotes {
		m.set("key_max_len", from(value(int(*s.MaxLength)-quotes), fmt.Sprintf("the %s schema's maxLength %d%s", p.Name, *s.MaxLength, less)))
	}
	if n := int(s.MinLength) - quotes; n > 0 {
		m.set("key_min_len", from(value(n), fmt.Sprintf("the %s schema's minLength %d%s", p.Name, s.MinLength, less)))
	}
	if s.Format == "uuid" {
		m.set("key_format", from(str("uuid"), "the "+p.Name+" schema's format"))
	}
	if p.Required {
		m.set("key_required", from(value(true), "the "+p.Name+" parameter is required"))
	} else {
		m.set("key_required", from(value(false), "the "+p.Name+" parameter is not required: a request without it executes"))
	}
	return m
}

// describedFields are the profile's statuses init reads from response
// descriptions.
var describedFields = []struct {
	name string
	re   *regexp.Regexp
}{{"mismatch_status", mismatchRE}, {"in_flight_status", inFlightRE}}

// idempotencyStatuses are the statuses overrides writes for a changed body
// or a key in flight, each with where the document says so.
func idempotencyStatuses(ops []operation) map[int]string {
	taken := map[int]string{}
	for _, field := range describedFields {
		if code, where := describedStatus(ops, field.re); code != 0 {
			taken[code] = field.name + ": " + where
		}
	}
	return taken
}

var (
	mismatchRE = regexp.MustCompile(`(?i)\b(different|another|other|changed|mismatch\w*)\s+(request\s+)?(body|payload|parameters|request)\b|\bmismatch\w*`)
	inFlightRE = regexp.MustCompile(`(?i)\b(in progress|in flight|in-flight|still (being )?process\w*|concurrent\w*)\b`)
)

// describedStatus is the first 4xx status whose response description
// matches re, in the operations' order.
func describedStatus(ops []operation, re *regexp.Regexp) (int, string) {
	for _, o := range ops {
		if o.op.Responses == nil {
			continue
		}
		keys := o.op.Responses.Keys()
		sort.Strings(keys)
		for _, k := range keys {
			r := o.op.Responses.Value(k)
			var code int
			if _, err := fmt.Sscanf(k, "%d", &code); err != nil || code < 400 || code >= 500 || r == nil || r.Value == nil || r.Value.Description == nil {
				continue
			}
			if m := re.FindString(*r.Value.Description); m != "" {
				return code, fmt.Sprintf("the %d response of %s says %q", code, opLabel(o), m)
			}
		}
	}
	return 0, ""
}

// shortDuration writes 24h rather than 24h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

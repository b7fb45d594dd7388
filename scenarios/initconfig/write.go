package initconfig

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/scenarios"
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
	for _, o := range ops {
		item, opNotes := a.operationNode(o, seen)
		opsNode.Content = append(opsNode.Content, item.n)
		notes = append(notes, opNotes...)
	}
	ok := root.set("operations", opsNode)
	if keyParam == nil && len(ops) > 0 {
		head(ok, fmt.Sprintf("TODO: no operation declares the %s header: these are every POST and PATCH; keep those that take a key.", a.keyHeader))
	}

	prof := newMapping()
	prof.set("preset", str(scenarios.DefaultProfile))
	if ov := a.overrides(ops, keyParam, syntax); len(ov.n.Content) > 0 {
		prof.set("overrides", ov.n)
	}
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

// principals are two users from the operations' security requirements,
// their secrets in ${IDEMCHECK_TOKEN_1} and ${IDEMCHECK_TOKEN_2}.
func (a *analysis) principals(ops []operation) (*yaml.Node, []string) {
	// Every alternative of every operation's requirement, in order: the
	// first idemcheck can send is the principals' (one set for all).
	var req openapi3.SecurityRequirements
	for _, o := range ops {
		if o.op.Security != nil {
			req = append(req, *o.op.Security...)
		} else {
			req = append(req, a.doc.Security...)
		}
	}
	var schemes openapi3.SecuritySchemes
	if a.doc.Components != nil {
		schemes = a.doc.Components.SecuritySchemes
	}
	var unsupported []string
	var heads [][2]string
	var why []string
	for _, alt := range req {
		names := sortedKeys(alt)
		if len(names) == 0 {
			continue
		}
		h, w, problem := sendable(names, schemes)
		switch {
		case problem != "":
			unsupported = append(unsupported, problem)
		case heads == nil || len(h) < len(heads): // the fewest secrets to set
			heads, why = h, w
		}
	}
	if heads != nil {
		return twoUsers(heads), []string{"From the security scheme " + strings.Join(why, " + ") + "."}
	}
	seq := sequence()
	p := newMapping()
	p.set("name", str("anonymous"))
	seq.Content = append(seq.Content, p.n)
	lines := []string{"TODO: the document declares no security scheme idemcheck can send; add the headers that authenticate a user,",
		"and a second principal for the scope cases (one user's key must not answer another's)."}
	if len(unsupported) > 0 {
		lines = append(lines, "Not sendable as a header: "+strings.Join(unsupported, "; ")+".")
	}
	return seq, lines
}

// twoUsers are the principals user1 and user2 sending heads, the
// secrets in IDEMCHECK_TOKEN_n (IDEMCHECK_TOKEN_n_2, ... for more).
func twoUsers(heads [][2]string) *yaml.Node {
	seq := sequence()
	for i, whose := range []string{"a user's secret", "another user's, for the scope cases"} {
		n := i + 1
		p := newMapping()
		p.set("name", str(fmt.Sprintf("user%d", n)))
		hs := flowMapping()
		var vars []string
		for i, hv := range heads {
			name := tokenVar(n)
			if i > 0 {
				name = fmt.Sprintf("%s_%d", name, i+1)
			}
			vars = append(vars, name)
			hs.set(hv[0], quoted(strings.Replace(hv[1], "${}", "${"+name+"}", 1)))
		}
		p.set("headers", hs.n)
		todo(hs.n, fmt.Sprintf("export %s: %s", strings.Join(vars, " and "), whose))
		seq.Content = append(seq.Content, p.n)
	}
	return seq
}

// sendable is the headers that carry one security requirement's secrets
// (header name, value with ${} where the variable goes), with the schemes
// they come from; problem says why idemcheck cannot send them.
func sendable(names []string, schemes openapi3.SecuritySchemes) (heads [][2]string, why []string, problem string) {
	for _, name := range names {
		ref := schemes[name]
		if ref == nil || ref.Value == nil {
			return nil, nil, name + " (not in components.securitySchemes)"
		}
		h, v, w, ok := credential(name, ref.Value)
		if !ok {
			return nil, nil, w
		}
		for _, have := range heads {
			if strings.EqualFold(have[0], h) {
				return nil, nil, strings.Join(names, " + ") + " (two secrets in one " + h + " header)"
			}
		}
		heads = append(heads, [2]string{h, v})
		why = append(why, w)
	}
	return heads, why, ""
}

// credential is the header a security scheme puts its secret in; value
// holds ${} where the environment variable goes.
func credential(name string, s *openapi3.SecurityScheme) (header, value, why string, ok bool) {
	switch strings.ToLower(s.Type) {
	case "http":
		switch strings.ToLower(s.Scheme) {
		case "bearer":
			return "Authorization", "Bearer ${}", name + " (http bearer)", true
		case "basic":
			return "Authorization", "Basic ${}", name + " (http basic: the variable holds base64 of user:password)", true
		}
		return "", "", fmt.Sprintf("%s (http %s)", name, s.Scheme), false
	case "apikey":
		switch strings.ToLower(s.In) {
		case "header":
			return s.Name, "${}", fmt.Sprintf("%s (API key in the %s header)", name, s.Name), true
		case "cookie":
			return "Cookie", s.Name + "=${}", fmt.Sprintf("%s (API key in the %s cookie)", name, s.Name), true
		}
		return "", "", fmt.Sprintf("%s (API key in the %s query parameter)", name, s.Name), false
	case "oauth2", "openidconnect":
		return "Authorization", "Bearer ${}", name + " (" + s.Type + ": the variable holds an access token)", true
	}
	return "", "", fmt.Sprintf("%s (%s)", name, s.Type), false
}

// evidenceComments writes the evidence sources the document suggests as
// commented config: they need what only the team knows.
// They follow k, the principals key.
func (a *analysis) evidenceComments(k *yaml.Node, ops []operation) {
	lines := []string{
		"TODO: evidence: how idemcheck counts executions. With only id_pointer, an execution that answered an error",
		"is invisible and those cases say unverifiable. Pick one source (" + evidenceDoc + "):",
	}
	for _, o := range ops {
		path, array, item, ok := a.listEndpoint(o)
		if !ok {
			continue
		}
		if array == "" {
			array = `""`
		}
		count := fmt.Sprintf("  count: {array: %s}", array)
		what := "its length is a global count (the run goes serial): no member of its elements holds the key"
		if m := keyMember(item); m != "" {
			count = fmt.Sprintf("  count: {array: %s, where: %s}", array, m)
			what = "the elements whose " + m + " holds the key count per key"
		}
		lines = append(lines,
			fmt.Sprintf("- the list endpoint GET %s: %s", path, what),
			"oracle:",
			"  url: "+path,
			count)
		break
	}
	lines = append(lines,
		"- the API's database: one row per execution",
		"oracle:",
		`  sql: {dsn: "${DATABASE_URL}", query: "select count(*) from TODO where idempotency_key = $1"}`)
	dep, route := a.dependency(), a.route()
	if dep != "" {
		lines = append(lines, fmt.Sprintf("- the dependency the document names (%s): point the API's PROVIDER_URL at listen", dep))
	} else {
		lines = append(lines, "- a dependency the API calls per execution (a payment provider, ...): point its URL at listen")
	}
	lines = append(lines,
		"downstream:",
		"  listen: 127.0.0.1:9090",
		"  routes:",
		fmt.Sprintf("    - {name: %s, method: POST, path: /TODO, response: {status: 200, body: {}}}", route),
		"oracle:",
		fmt.Sprintf("  downstream: %s", route))
	foot(k, lines...)
}

// counter is the execution counter the document marks with
// x-idemcheck-oracle on a GET: {pointer: /executions, key: NAME} (key
// names the query parameter that takes the idempotency key; without one
// the counter is global).
func (a *analysis) counter() (url, pointer, why string) {
	for _, o := range a.all() {
		ext, ok := o.op.Extensions["x-idemcheck-oracle"].(map[string]any)
		if o.method != http.MethodGet || !ok {
			continue
		}
		pointer, _ = ext["pointer"].(string)
		if pointer == "" {
			continue
		}
		url = o.path
		if key, _ := ext["key"].(string); key != "" {
			url += "?" + key + "={key}"
		}
		return url, pointer, fmt.Sprintf("x-idemcheck-oracle of GET %s", o.path)
	}
	return "", "", ""
}

// dependencyRE finds a dependency named in prose.
var dependencyRE = regexp.MustCompile(`(?i)\b((?:payment |card |shipping |email |sms )?(?:provider|gateway|processor|upstream|downstream|third[- ]party(?: service| api)?))\b`)

// route is the downstream route's name in the commented config: the
// dependency the document names, else TODO.
func (a *analysis) route() string {
	if dep := a.dependency(); dep != "" {
		return slug(dep)
	}
	return "TODO"
}

// dependency is a dependency the document names: an x-idemcheck-downstream
// extension, else a provider or gateway its descriptions mention.
func (a *analysis) dependency() string {
	if v, ok := a.doc.Extensions["x-idemcheck-downstream"].(string); ok && v != "" {
		return v
	}
	texts := []string{}
	if a.doc.Info != nil {
		texts = append(texts, a.doc.Info.Description)
	}
	for _, o := range a.all() {
		texts = append(texts, o.op.Summary, o.op.Description)
	}
	for _, t := range texts {
		if m := dependencyRE.FindString(t); m != "" {
			return strings.ToLower(m)
		}
	}
	return ""
}

// operationNode writes one operation; notes are TODOs for the file head.
func (a *analysis) operationNode(o operation, seen map[string]bool) (mapping, []string) {
	m := newMapping()
	name := opName(o, seen)
	nn := str(name)
	if o.id != "" && o.id != name {
		from(nn, "operationId "+o.id)
	}
	m.set("name", nn)
	m.set("method", str(o.method))
	path, gap := a.fillPath(o)
	pn := str(path)
	if gap != "" {
		todo(pn, gap)
	}
	m.set("path", pn)

	b, bodyGap := a.body(o)
	if b != nil {
		hs := flowMapping()
		hs.set("Content-Type", str("application/json"))
		m.set("headers", hs.n)
		bn := fromOrGuess(value(b.value), b.how)
		if b.gap != "" {
			todo(bn, b.gap)
		}
		m.set("body", bn)
	}
	var notes []string
	if bodyGap != "" {
		notes = append(notes, fmt.Sprintf("TODO: %s: %s.", name, bodyGap))
	}

	code, resp := success(o)
	ptr, why := idMember(responseSchema(resp), resource(o.path))
	var idLine []string // a commented id_pointer, when the guess is weak
	switch src := fmt.Sprintf("%s in the %d response", why, code); {
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
	if len(muts) > 0 {
		seq := sequence()
		for _, mu := range muts {
			mm := flowMapping()
			mm.set("name", str(mu.name))
			mm.set("patch", value(mu.patch))
			what := "a changed member"
			if strings.HasPrefix(mu.name, "added-") {
				what = "an added member"
			}
			guessed(mm.n, what+", still valid against the schema")
			seq.Content = append(seq.Content, mm.n)
		}
		head(m.set("mutations", seq), commented...)
		commented = nil
	} else if b != nil {
		notes = append(notes, fmt.Sprintf("TODO: %s: no member to change: add mutations (a materially different body) for the mismatch cases.", name))
	}

	variants := newMapping()
	if patch, status, why := a.invalid(o, b); patch != nil {
		v := flowMapping()
		v.set("patch", value(patch))
		if status != 0 {
			v.set("status", value(status))
		}
		guessed(v.n, why)
		variants.set(scenarios.VariantInvalid, v.n)
	}
	prose, lines := a.variantTODOs(o)
	if len(variants.n.Content) > 0 {
		head(m.set("variants", variants.n), commented...)
		foot(variants.n.Content[len(variants.n.Content)-2], append(prose, lines...)...)
	} else {
		foot(m.n.Content[len(m.n.Content)-2], append(append(append(commented, prose...), "variants:"), lines...)...)
	}
	return m, notes
}

func bodySchema(b *body) *openapi3.Schema {
	if b == nil {
		return nil
	}
	return b.schema
}

// variantTODOs are the slow and error variants as commented config: a
// real API has no knob for them; the downstream double can play them.
func (a *analysis) variantTODOs(o operation) (prose, lines []string) {
	statuses := map[string]int{}
	if o.op.Responses != nil {
		keys := o.op.Responses.Keys()
		sort.Strings(keys) // 402 before other 4xx, 502 before 503
		for _, k := range keys {
			code, err := strconv.Atoi(k)
			switch {
			case err != nil:
			case statuses["business_error"] == 0 && (code == http.StatusPaymentRequired || (code >= 400 && code < 500 && !protocolError[code])):
				statuses["business_error"] = code
			case statuses["transient_error"] == 0 && code >= 500:
				statuses["transient_error"] = code
			}
		}
	}
	prose = []string{fmt.Sprintf("TODO: slow and error variants (%s): a request that stays in flight, and the API's", evidenceDoc),
		"business and transient errors; with downstream:, the double plays them:"}
	route := a.route()
	lines = []string{fmt.Sprintf("  slow: {downstream: {route: %s, delay: 1500ms}, duration: 1500ms}", route)}
	for _, v := range []struct{ name, provider string }{{"business_error", "402"}, {"transient_error", "503"}} {
		if c := statuses[v.name]; c != 0 {
			lines = append(lines, fmt.Sprintf("  %s: {downstream: {route: %s, status: %s}, status: %d}  # the document declares %d", v.name, route, v.provider, c, c))
		} else {
			lines = append(lines, fmt.Sprintf("  %s: {downstream: {route: %s, status: %s}, status: TODO}", v.name, route, v.provider))
		}
	}
	return prose, lines
}

// protocolError are the 4xx statuses of the protocol (bad input, auth,
// idempotency errors), not a business outcome.
var protocolError = map[int]bool{400: true, 401: true, 403: true, 404: true, 405: true, 406: true, 409: true,
	413: true, 415: true, 422: true, 423: true, 425: true, 428: true, 429: true}

// overrides are the profile fields the document states: the statuses
// its responses' descriptions give to a changed body and to a key in
// flight, and what the key parameter's schema says of the key.
func (a *analysis) overrides(ops []operation, p *openapi3.Parameter, syntax scenarios.KeySyntax) mapping {
	m := newMapping()
	if syntax == scenarios.Raw {
		m.set("key_syntax", from(str(string(syntax)), "as key_syntax above"))
	}
	for _, field := range []struct {
		name string
		re   *regexp.Regexp
	}{{"mismatch_status", mismatchRE}, {"in_flight_status", inFlightRE}} {
		if code, where := describedStatus(ops, field.re); code != 0 {
			m.set(field.name, guessed(value([]int{code}), where))
		}
	}
	if p == nil || p.Schema == nil || p.Schema.Value == nil {
		return m
	}
	s := p.Schema.Value
	if s.MaxLength != nil {
		m.set("key_max_len", from(value(int(*s.MaxLength)), "the "+p.Name+" schema's maxLength"))
	}
	if s.MinLength > 0 {
		m.set("key_min_len", from(value(int(s.MinLength)), "the "+p.Name+" schema's minLength"))
	}
	if s.Format == "uuid" {
		m.set("key_format", from(str("uuid"), "the "+p.Name+" schema's format"))
	}
	if p.Required {
		m.set("key_required", from(str("yes"), "the "+p.Name+" parameter is required"))
	}
	return m
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

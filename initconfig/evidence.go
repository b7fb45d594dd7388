package initconfig

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// evidenceComments writes the evidence sources the document suggests as
// commented config after k (the principals key): they need what only the
// team knows.
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
		// An empty answer breaks an API that reads the provider's id (it
		// answers 502 to every request): the double answers one, {seq}
		// making each call's its own.
		fmt.Sprintf(`    - {name: %s, method: POST, path: /TODO, response: {status: 200, body: {id: "%s_{seq}"}}}  # TODO: answer as the provider does, with every member the API reads (%s)`,
			route, idPrefix(dep), doubleDoc),
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

// doubleDoc explains the double's routes and their answers.
const doubleDoc = "docs/double.md"

// idPrefix starts the ids the commented double route answers with, as a
// provider's do ("pay_1" for a payment provider).
func idPrefix(dependency string) string {
	if strings.Contains(dependency, "pay") || strings.Contains(dependency, "card") {
		return "pay"
	}
	return "ext"
}

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

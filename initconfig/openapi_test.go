package initconfig

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"go.uber.org/goleak"
	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// documents are the three OpenAPI documents of different styles init is
// proved on; cmd/idemcheck's TestInitOpenAPIRuns runs their configs
// against servers implementing them.
var documents = []struct {
	name, path string
	style      string
	keyHeader  string
	syntax     apispec.KeySyntax
	ttl        time.Duration
	base       string
	credential string            // the principals' header
	ids        map[string]string // operation -> id_pointer
	oracle     string            // from x-idemcheck-oracle ("": evidence TODOs)
	// invalidStatus is the invalid variant's status: the one of 400 and
	// 422 the document declares with no other meaning, 0 when both are.
	invalidStatus int
}{
	{"payments", "../examples/payments.openapi.yaml", "3.0 YAML with examples, the reference app",
		"Idempotency-Key", apispec.SFString, 24 * time.Hour, "http://127.0.0.1:8080", "Authorization",
		map[string]string{"createCharge": "/id", "createRefund": "/id"}, "/v1/effects?key={key}", 0},
	{"charges", "testdata/charges.json", "3.1 JSON without examples (type arrays, numeric exclusiveMinimum, const)",
		"Idempotency-Key", apispec.SFString, 7 * 24 * time.Hour, "http://127.0.0.1:8092/api", "Authorization",
		map[string]string{"charge": "/id", "refund": "/id"}, "", 400},
	{"bookings", "testdata/bookings.yaml", "3.1 YAML, $refs everywhere, allOf, an API-key scheme beside OAuth",
		"X-Idempotency-Key", apispec.Raw, 2 * time.Second, "http://127.0.0.1:8091", "X-Api-Key",
		map[string]string{"bookRoom": "/booking/booking_id"}, "", 400},
}

// setTokens fills the two secrets every generated config asks for.
func setTokens(t *testing.T) {
	t.Setenv("IDEMCHECK_TOKEN_1", "token-one")
	t.Setenv("IDEMCHECK_TOKEN_2", "token-two")
}

// TestFromOpenAPIDocuments: each document gives a config the config
// loader accepts as it is (what idemcheck list reads), with the key header,
// syntax, TTL, base URL, principals and id pointers the document states,
// and bodies and mutated bodies valid against the request schema.
func TestFromOpenAPIDocuments(t *testing.T) {
	setTokens(t)
	for _, d := range documents {
		t.Run(d.name, func(t *testing.T) {
			out, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: d.path, Command: "idemcheck init"})
			if err != nil {
				t.Fatalf("%s (%s): %v", d.path, d.style, err)
			}
			tg, _, err := apispec.ParseConfig(out)
			if err != nil {
				t.Fatalf("rule: the config loads without edits once the secrets are set: %v\n%s", err, out)
			}
			if tg.KeyHeader != d.keyHeader || tg.KeySyntax != d.syntax || tg.TTL != d.ttl || tg.BaseURL != d.base {
				t.Errorf("key %s %s, ttl %s, base %s; want %s %s, %s, %s", tg.KeyHeader, tg.KeySyntax, tg.TTL, tg.BaseURL,
					d.keyHeader, d.syntax, d.ttl, d.base)
			}
			if len(tg.Principals) != 2 || !strings.Contains(tg.Principals[0].Headers[d.credential], "token-one") ||
				!strings.Contains(tg.Principals[1].Headers[d.credential], "token-two") {
				t.Errorf("rule: two principals from the security scheme, secrets from the environment: %+v", tg.Principals)
			}
			if len(tg.Operations) != len(d.ids) {
				t.Errorf("%d operations, want %d (those declaring the key header)", len(tg.Operations), len(d.ids))
			}
			doc, err := loadDocument(context.Background(), d.path, 0, apispec.TLS{}, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range tg.Operations {
				if want, ok := d.ids[op.Name]; !ok || op.IDPointer != want {
					t.Errorf("%s: id_pointer %q, want %q", op.Name, op.IDPointer, want)
				}
				schema := requestSchema(t, doc, op)
				checkValid(t, doc, schema, op.Name+" body", op.Body)
				if len(op.Mutations) == 0 {
					t.Errorf("%s: no mutation", op.Name)
				}
				for _, m := range op.Mutations {
					b, err := jsonx.MergePatch(op.Body, m.Patch)
					if err != nil {
						t.Fatal(err)
					}
					if string(b) == string(op.Body) {
						t.Errorf("%s: mutation %s changes nothing", op.Name, m.Name)
					}
					checkValid(t, doc, schema, op.Name+" "+m.Name, b)
				}
				if v, ok := op.Variants[apispec.VariantInvalid]; ok {
					b, _, _ := op.VariantBody(apispec.VariantInvalid)
					var x any
					_ = json.Unmarshal(b, &x)
					if validate(doc, schema, x) == nil {
						t.Errorf("rule: the invalid variant breaks the schema; %s's is valid: %s", op.Name, b)
					}
					if v.Status != d.invalidStatus {
						t.Errorf("%s: invalid status %d, want %d (the one documented for a bad body, none when 400 and 422 are)", op.Name, v.Status, d.invalidStatus)
					}
				}
			}
			marks := []string{"# guessed: ", "# TODO: ", "docs/evidence.md", "downstream:"}
			if d.oracle == "" {
				marks = append(marks, "sql:")
				if tg.Oracle != nil {
					t.Errorf("an oracle the document does not mark: %+v", tg.Oracle)
				}
			} else if tg.Oracle == nil || tg.Oracle.URL != d.oracle || tg.Oracle.Pointer != "/executions" {
				t.Errorf("rule: the counter marked x-idemcheck-oracle is the oracle; got %+v", tg.Oracle)
			}
			for _, mark := range marks {
				if !strings.Contains(string(out), mark) {
					t.Errorf("rule: guesses and gaps are commented; no %q in\n%s", mark, out)
				}
			}
		})
	}
}

// requestSchema is the JSON request schema of op (by method and path).
func requestSchema(t *testing.T, doc *openapi3.T, op apispec.Operation) *openapi3.Schema {
	t.Helper()
	a := analysis{doc: doc}
	for _, o := range a.all() {
		if o.method == op.Method && (o.id == op.Name || strings.HasSuffix(op.Path, o.path)) {
			_, m := jsonMedia(o.op.RequestBody.Value.Content)
			return m.Schema.Value
		}
	}
	t.Fatalf("no operation %s %s in the document", op.Method, op.Path)
	return nil
}

func checkValid(t *testing.T, doc *openapi3.T, s *openapi3.Schema, what string, body json.RawMessage) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := validate(doc, s, v); err != nil {
		t.Errorf("rule: %s validates against the request schema: %v (%s)", what, err, body)
	}
}

// TestFromOpenAPIHints: what the bookings document states beside its
// schemas reaches the file: the list endpoint as a commented list oracle,
// the marker member, statuses from response descriptions, key limits.
func TestFromOpenAPIHints(t *testing.T) {
	out, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: "testdata/bookings.yaml", Command: "idemcheck init"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"#   url: /v2/bookings\n",
		"#   count: {array: /data, where: /idempotency_key}",
		"# marker: /reference",
		"mismatch_status: [409] # guessed: the 409 response of bookRoom says \"different request body\"",
		"in_flight_status: [409]",
		"key_max_len: 64",
		"ttl: 2s # from x-idempotency-ttl of the X-Idempotency-Key parameter",
		"key_syntax: raw # from the X-Idempotency-Key parameter's description (\"sent as is\")",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// TestFromOpenAPIDependency: a dependency the document names becomes the
// route of the commented downstream double and its oracle.
func TestFromOpenAPIDependency(t *testing.T) {
	out, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: "testdata/charges.json"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# - the dependency the document names (payment provider): point the API's PROVIDER_URL at listen",
		`#     - {name: payment-provider, method: POST, path: /TODO, response: {status: 200, body: {id: "pay_{seq}"}}}  # TODO: answer as the provider does`,
		"#   downstream: payment-provider",
		"# slow: {downstream: {route: payment-provider, delay: 1500ms}, duration: 1500ms}",
		"# business_error: {downstream: {route: payment-provider, status: 402}, status: 402}  # the document declares 402",
		"# transient_error: {downstream: {route: payment-provider, status: 503}, status: 503}  # the document declares 503",
		"#   transient_error: {downstream: {route: payment-provider, status: 503}, status: TODO}",
		`invalid: {patch: {amount: not-a-number}, status: 400} # guessed: amount of the wrong type; the document declares 400 (not 422: its 422 says "another payload")`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// TestFromOpenAPISelection: --operation picks operations by operationId
// (even one without the key header), --key-header names the header, and
// without any declared key header every POST and PATCH is written with a
// TODO saying so.
func TestFromOpenAPISelection(t *testing.T) {
	setTokens(t)
	load := func(o OpenAPIOptions) *apispec.Target {
		t.Helper()
		o.Command = "idemcheck init"
		out, err := FromOpenAPI(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		tg, _, err := apispec.ParseConfig(out)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return tg
	}
	tg := load(OpenAPIOptions{Source: "testdata/charges.json", Operations: []string{"refund"}})
	if len(tg.Operations) != 1 || tg.Operations[0].Path != "/refunds" {
		t.Errorf("--operation refund: %+v", tg.Operations)
	}
	tg = load(OpenAPIOptions{Source: "testdata/charges.json", Operations: []string{"getCharge"}})
	if op := tg.Operations[0]; op.Method != "GET" || !strings.HasPrefix(op.Path, "/charges/") || strings.Contains(op.Path, "{") {
		t.Errorf("rule: path parameters are filled; got %s %s", op.Method, op.Path)
	}
	tg = load(OpenAPIOptions{Source: "testdata/bookings.yaml", KeyHeader: "Request-Id"})
	if tg.KeyHeader != "Request-Id" || len(tg.Operations) != 1 || tg.Operations[0].Method != "POST" {
		t.Errorf("--key-header with no operation declaring it: every POST and PATCH; got %s %+v", tg.KeyHeader, tg.Operations)
	}
}

// TestFromOpenAPIMinimal: a document that says little (no servers, no
// security, no key header, no id of the created resource, a path
// parameter without example) still gives a file that loads, each gap a
// TODO; a *_id member that may be another resource's is left commented.
func TestFromOpenAPIMinimal(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "minimal.yaml")
	if err := os.WriteFile(doc, []byte(`openapi: 3.0.3
info: {title: Minimal, version: '1'}
paths:
  /carts/{cart}/items:
    parameters: [{name: cart, in: path, required: true, schema: {type: integer, minimum: 7}}]
    post:
      requestBody:
        content:
          application/json:
            schema: {type: object, required: [sku], properties: {sku: {type: string}}}
      responses:
        '201':
          description: Added.
          content: {application/json: {schema: {type: object, properties: {cart_id: {type: integer}, sku: {type: string}}}}}
    patch:
      requestBody:
        content: {text/csv: {schema: {type: string}}}
      responses: {'200': {description: Updated.}}
  /carts/{cart}:
    parameters: [{name: cart, in: path, required: true, schema: {type: integer, example: 12}}]
    patch:
      requestBody:
        content: {application/merge-patch+json: {schema: {type: object, required: [note], properties: {note: {type: string}}}}}
      responses: {'200': {description: Updated.}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: doc, Command: "idemcheck init"})
	if err != nil {
		t.Fatal(err)
	}
	tg, _, err := apispec.ParseConfig(out)
	if err != nil {
		t.Fatalf("rule: an incomplete document still gives a file that loads: %v\n%s", err, out)
	}
	if len(tg.Operations) != 3 || tg.Operations[1].Path != "/carts/7/items" || tg.Operations[1].Name != "items" ||
		tg.Operations[2].Name != "patch-items" || len(tg.Principals) != 1 {
		t.Errorf("operations %+v, principals %+v", tg.Operations, tg.Principals)
	}
	if op := tg.Operations[0]; op.Path != "/carts/12" || op.Headers["Content-Type"] != "application/merge-patch+json" {
		t.Errorf("rule: the schema's example fills the path; the declared JSON media type is the Content-Type: %s %v", op.Path, op.Headers)
	}
	for _, want := range []string{
		"base_url: http://127.0.0.1:8080 # TODO: the API's base URL (the document has no servers entry)",
		"# TODO: path parameter cart is a placeholder (7): use an existing one",
		"# TODO: the document declares no security scheme",
		"# TODO: no operation declares the Idempotency-Key header",
		"# id_pointer: /cart_id  # TODO: a member named *_id: check it is the created resource's in the 201 response; uncomment if it is",
		"TODO: patch-items: the request body is not JSON (text/csv)",
		"# ttl: 24h  # TODO:",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// TestFromOpenAPIQueryAndHeader: an operation that declares a query
// parameter and a version header gets a mutation of each (a required one
// also goes in the normal request); the key, credentials, content
// negotiation and tracing fields get none; the file loads without edits.
func TestFromOpenAPIQueryAndHeader(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "versioned.yaml")
	if err := os.WriteFile(doc, []byte(`openapi: 3.0.3
info: {title: Versioned, version: '1'}
servers: [{url: 'http://127.0.0.1:8080'}]
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Partner}
security: [{key: []}]
paths:
  /v1/charges:
    post:
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
        - {name: capture, in: query, schema: {type: boolean, default: true}}
        - {name: expand, in: query, required: true, schema: {type: string, enum: [customer, none]}}
        - {name: Api-Version, in: header, required: true, schema: {type: string, example: '2024-01-01'}}
        - {name: Accept-Language, in: header, schema: {type: string}}
        - {name: X-Request-Id, in: header, schema: {type: string}}
        - {name: X-Partner, in: header, schema: {type: string}}
      requestBody:
        content:
          application/json:
            schema: {type: object, required: [amount], properties: {amount: {type: integer, example: 1000}}}
      responses:
        '201':
          description: Created.
          content: {application/json: {schema: {type: object, properties: {id: {type: string}}}}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	setTokens(t)
	out, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: doc, Command: "idemcheck init"})
	if err != nil {
		t.Fatal(err)
	}
	tg, _, err := apispec.ParseConfig(out)
	if err != nil {
		t.Fatalf("rule: the config loads without edits: %v\n%s", err, out)
	}
	op := tg.Operations[0]
	if op.Path != "/v1/charges?expand=customer" || op.Headers["Api-Version"] != "2024-01-01" {
		t.Errorf("rule: required parameters go in the normal request: path %s, headers %v", op.Path, op.Headers)
	}
	got := map[string]string{}
	for _, m := range op.Mutations {
		got[m.Name] = m.What() + fmt.Sprint(m.Query, m.Headers)
	}
	want := map[string]string{
		"changed-amount":    "bodymap[] map[]",
		"other-capture":     "querymap[capture:false] map[]",
		"other-expand":      "querymap[expand:none] map[]",
		"other-api-version": "headersmap[] map[Api-Version:2024-01-02]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("mutations %v, want %v\n%s", got, want, out)
	}
}

// TestFromOpenAPIErrors: each bad input is one line naming the file,
// field or URL; a URL that does not answer is ErrUnreachable (exit 4).
func TestFromOpenAPIErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := []struct {
		name, src string
		ops       []string
		want      string
	}{
		{"missing file", filepath.Join(dir, "nope.yaml"), nil, "nope.yaml"},
		{"not YAML", write("broken.yaml", "openapi: 3.0.3\npaths: [\n"), nil, "broken.yaml"},
		{"swagger 2", write("swagger.yaml", "swagger: '2.0'\ninfo: {title: x, version: '1'}\npaths: {}\n"), nil, "OpenAPI 3.0 or 3.1"},
		{"invalid", write("invalid.yaml", "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    post:\n      responses: {'200': {}}\n"), nil, "invalid"},
		{"no operation", write("empty.yaml", "openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths: {}\n"), nil, "no operation"},
		{"unknown operationId", "testdata/charges.json", []string{"chargeTwice"}, `--operation "chargeTwice"`},
	}
	for _, b := range bad {
		_, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: b.src, Operations: b.ops})
		switch {
		case err == nil:
			t.Errorf("%s: no error", b.name)
		case errors.Is(err, apispec.ErrUnreachable):
			t.Errorf("%s: %v is not unreachable", b.name, err)
		case strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), b.src):
			t.Errorf("%s: %q: want one line naming %s and %q", b.name, err, b.src, b.want)
		}
	}
	_, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: "http://127.0.0.1:1/openapi.json", Timeout: 2 * time.Second})
	if !errors.Is(err, apispec.ErrUnreachable) || !strings.Contains(err.Error(), "127.0.0.1:1/openapi.json") {
		t.Errorf("unreachable URL: %v", err)
	}
}

// TestFromOpenAPIURL: a document served over HTTP loads, and so do its
// relative external $refs.
func TestFromOpenAPIURL(t *testing.T) {
	setTokens(t)
	srv := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer srv.Close()
	out, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: srv.URL + "/split/api.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	tg, _, err := apispec.ParseConfig(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if op := tg.Operations[0]; op.Path != "/tickets" || op.IDPointer != "/ticket_id" || !strings.Contains(string(op.Body), `"seat"`) {
		t.Errorf("from the external schema: %s %s %s", op.Path, op.IDPointer, op.Body)
	}
	if _, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: srv.URL + "/missing.yaml"}); err == nil || errors.Is(err, apispec.ErrUnreachable) {
		t.Errorf("a 404 document: %v, want a document error", err)
	}
	local, err := filepath.Abs("testdata/split/schemas.yaml")
	if err != nil {
		t.Fatal(err)
	}
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(strings.ReplaceAll(`openapi: 3.0.3
info: {title: x, version: '1'}
paths:
  /a:
    post:
      requestBody: {content: {application/json: {schema: {$ref: 'file://LOCAL#/Purchase'}}}}
      responses: {'201': {description: ok}}
`, "LOCAL", local)))
	}))
	defer evil.Close()
	_, err = FromOpenAPI(context.Background(), OpenAPIOptions{Source: evil.URL + "/openapi.yaml"})
	if err == nil || !strings.Contains(err.Error(), "must be http(s) URLs") {
		t.Errorf("rule: a remote document's $ref does not read local files: %v", err)
	}
}

// TestCredentialHeaders: each security scheme kind puts its secret where
// the API reads it; a query-parameter key cannot be a principal's header.
func TestCredentialHeaders(t *testing.T) {
	for _, tc := range []struct {
		s             openapi3.SecurityScheme
		header, value string
		ok            bool
	}{
		{openapi3.SecurityScheme{Type: "http", Scheme: "Bearer"}, "Authorization", "Bearer ${}", true},
		{openapi3.SecurityScheme{Type: "http", Scheme: "basic"}, "Authorization", "Basic ${}", true},
		{openapi3.SecurityScheme{Type: "apiKey", In: "header", Name: "X-Key"}, "X-Key", "${}", true},
		{openapi3.SecurityScheme{Type: "apiKey", In: "cookie", Name: "sid"}, "Cookie", "sid=${}", true},
		{openapi3.SecurityScheme{Type: "oauth2"}, "Authorization", "Bearer ${}", true},
		{openapi3.SecurityScheme{Type: "openIdConnect"}, "Authorization", "Bearer ${}", true},
		{openapi3.SecurityScheme{Type: "apiKey", In: "query", Name: "api_key"}, "", "", false},
		{openapi3.SecurityScheme{Type: "http", Scheme: "digest"}, "", "", false},
		{openapi3.SecurityScheme{Type: "mutualTLS"}, "", "", false},
	} {
		h, v, why, ok := credential("s", &tc.s)
		if h != tc.header || v != tc.value || ok != tc.ok || why == "" {
			t.Errorf("%+v: %q %q %v (%s); want %q %q %v", tc.s, h, v, ok, why, tc.header, tc.value, tc.ok)
		}
	}
}

// TestBaseURL: the first absolute server (variables at their defaults);
// a relative one keeps its path under a placeholder host, a TODO.
func TestBaseURL(t *testing.T) {
	for _, tc := range []struct {
		servers   openapi3.Servers
		base, gap string
	}{
		{openapi3.Servers{{URL: "/api/v2"}}, "http://127.0.0.1:8080/api/v2", "relative"},
		{openapi3.Servers{{URL: "{scheme}://{host}/v1", Variables: map[string]*openapi3.ServerVariable{
			"scheme": {Default: "https"}, "host": {Default: "api.example.com"}}}}, "https://api.example.com/v1", ""},
		{openapi3.Servers{{URL: "/x"}, {URL: "https://staging.example.com/"}}, "https://staging.example.com", ""},
		{nil, "http://127.0.0.1:8080", "no servers"},
	} {
		a := analysis{doc: &openapi3.T{Servers: tc.servers}}
		base, _, gap := a.baseURL()
		if base != tc.base || (tc.gap == "") != (gap == "") || !strings.Contains(gap, tc.gap) {
			t.Errorf("%v: %q (gap %q); want %q (gap %q)", tc.servers, base, gap, tc.base, tc.gap)
		}
	}
}

// TestFromOpenAPIURLTLS: a document on an https server signed by a
// private CA loads with that CA (--ca-cert), and not without it.
func TestFromOpenAPIURLTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.FileServer(http.Dir("testdata")))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	src := srv.URL + "/bookings.yaml"
	if _, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: src}); err == nil {
		t.Error("rule: an unknown CA is refused")
	}
	if _, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: src, TLS: apispec.TLS{CACert: ca}}); err != nil {
		t.Errorf("with the CA: %v", err)
	}
}

// TestPrincipalsFromRequirements: of every alternative of the operations'
// security requirements, the principals send the one with the fewest
// secrets idemcheck can send; two secrets for one header, or a key in the
// query, are not sendable and are named.
func TestPrincipalsFromRequirements(t *testing.T) {
	setTokens(t)
	doc := filepath.Join(t.TempDir(), "security.yaml")
	if err := os.WriteFile(doc, []byte(`openapi: 3.1.0
info: {title: Security, version: '1'}
servers: [{url: 'https://api.example.com'}]
components:
  securitySchemes:
    basic: {type: http, scheme: basic}
    bearer: {type: http, scheme: bearer}
    query: {type: apiKey, in: query, name: api_key}
    header: {type: apiKey, in: header, name: X-Key}
    tenant: {type: apiKey, in: header, name: X-Tenant}
paths:
  /a:
    post:
      operationId: a
      security: [{basic: [], bearer: []}, {query: []}, {header: [], tenant: []}]
      parameters: [{name: Idempotency-Key, in: header, schema: {type: string}}]
      responses: {'201': {description: ok}}
  /b:
    post:
      operationId: b
      security: [{bearer: []}]
      parameters: [{name: Idempotency-Key, in: header, schema: {type: string}}]
      responses: {'201': {description: ok}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: doc})
	if err != nil {
		t.Fatal(err)
	}
	tg, _, err := apispec.ParseConfig(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if h := tg.Principals[1].Headers; len(h) != 1 || h["Authorization"] != "Bearer token-two" {
		t.Errorf("rule: the alternative with the fewest secrets (bearer on /b); got %v\n%s", h, out)
	}
	t.Setenv("IDEMCHECK_TOKEN_1_2", "tenant-one")
	t.Setenv("IDEMCHECK_TOKEN_2_2", "tenant-two")
	out, err = FromOpenAPI(context.Background(), OpenAPIOptions{Source: doc, Operations: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if tg, _, err = apispec.ParseConfig(out); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if h := tg.Principals[0].Headers; len(h) != 2 || h["X-Key"] != "token-one" || h["X-Tenant"] != "tenant-one" {
		t.Errorf("rule: basic + bearer share one header and a query key is no header: X-Key + X-Tenant; got %v\n%s", h, out)
	}
}

// TestFromOpenAPINoValidate: a document that does not validate is refused
// with the validator's words and the way out; --no-validate reads it.
func TestFromOpenAPINoValidate(t *testing.T) {
	setTokens(t)
	doc := filepath.Join(t.TempDir(), "conflict.yaml")
	if err := os.WriteFile(doc, []byte(`openapi: 3.0.3
info: {title: Conflict, version: '1'}
paths:
  /orgs/{org}/items/{a}:
    parameters: [{name: org, in: path, required: true, schema: {type: string}}, {name: a, in: path, required: true, schema: {type: string}}]
    post: {responses: {'201': {description: ok}}}
  /orgs/{org}/items/{b}:
    parameters: [{name: org, in: path, required: true, schema: {type: string}}, {name: b, in: path, required: true, schema: {type: string}}]
    get: {responses: {'200': {description: ok}}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: doc})
	if err == nil || !strings.Contains(err.Error(), "conflicting paths") || !strings.Contains(err.Error(), "--no-validate") {
		t.Errorf("want the validator's reason and --no-validate: %v", err)
	}
	out, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: doc, NoValidate: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := apispec.ParseConfig(out); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
}

// TestCommentedConfig: every block of commented config in a written file
// is YAML of the shape the evidence config reads (docs/evidence.md), at
// the indentation it belongs to, so that uncommenting it and filling its
// TODOs is all a user does.
func TestCommentedConfig(t *testing.T) {
	shapes := map[string][][]string{ // key -> alternatives of required paths
		"oracle":          {{"url", "count.array"}, {"sql.dsn", "sql.query"}, {"downstream"}},
		"downstream":      {{"listen", "routes"}},
		"variants":        {{"slow.downstream.route", "slow.downstream.delay", "slow.duration", "business_error.downstream.status", "transient_error.downstream.status"}},
		"slow":            {{"downstream.route", "downstream.delay", "duration"}},
		"business_error":  {{"downstream.route", "downstream.status", "status"}},
		"transient_error": {{"downstream.route", "downstream.status", "status"}},
		"marker":          {{}},
		"ttl":             {{}},
		"id_pointer":      {{}},
		"overrides":       {{}},
	}
	for _, f := range openFields { // the profile fields a preset leaves open
		shapes[f.name] = [][]string{{}}
	}
	for _, tc := range []struct {
		doc  string
		want map[string]int
	}{
		// bookings: a list oracle, an invalid variant written (the others
		// commented beside it), a marker, a declared TTL.
		{"testdata/bookings.yaml", map[string]int{"oracle": 3, "downstream": 1, "slow": 1, "business_error": 1, "transient_error": 1, "marker": 1}},
		// charges: no list endpoint; refund has no invalid variant.
		{"testdata/charges.json", map[string]int{"oracle": 2, "downstream": 1, "slow": 1, "business_error": 1, "transient_error": 1, "variants": 1, "marker": 2}},
		{"../examples/payments.openapi.yaml", map[string]int{"slow": 2, "business_error": 2, "transient_error": 2, "marker": 2}},
	} {
		out, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: tc.doc})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, b := range commentedBlocks(string(out)) {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(b.text), &m); err != nil || len(m) != 1 {
				t.Errorf("%s: rule: commented config is YAML with one top-level key: %v\n%s", tc.doc, err, b.text)
				continue
			}
			for k, v := range m {
				seen[k]++
				alts, ok := shapes[k]
				if !ok {
					t.Errorf("%s: commented %s is no config key", tc.doc, k)
				}
				if !anyShape(v, alts) {
					t.Errorf("%s: commented %s has none of the shapes %v:\n%s", tc.doc, k, alts, b.text)
				}
				if !b.fits(string(out)) {
					t.Errorf("%s: commented %s, uncommented, does not load at its place:\n%s", tc.doc, k, b.text)
				}
			}
		}
		for k, n := range tc.want {
			if seen[k] != n {
				t.Errorf("%s: %d commented %s blocks, want %d (all: %v)", tc.doc, seen[k], k, n, seen)
			}
		}
	}
}

func anyShape(v any, alts [][]string) bool {
	for _, paths := range alts {
		ok := true
		for _, p := range paths {
			ok = ok && hasPath(v, strings.Split(p, "."))
		}
		if ok {
			return true
		}
	}
	return false
}

// block is a run of commented config: its text and the lines it came
// from.
type block struct {
	text       string
	start, end int // line indexes in the file, end exclusive
}

// fits reports whether the file still parses as YAML with the block
// uncommented in place (indentation kept).
func (b block) fits(file string) bool {
	lines := strings.Split(file, "\n")
	for i := b.start; i < b.end; i++ {
		trimmed := strings.TrimLeft(lines[i], " ")
		at := len(lines[i]) - len(trimmed)
		text := strings.TrimPrefix(trimmed, "# ")
		if j := strings.Index(text, "  # "); j >= 0 { // its own trailing comment
			text = text[:j]
		}
		lines[i] = strings.Repeat(" ", at) + text
	}
	var doc yaml.Node
	return yaml.Unmarshal([]byte(strings.Join(lines, "\n")), &doc) == nil
}

// commentedBlocks are the runs of comment lines that hold config: a
// "key:" line and the lines after it indented under it, at one column.
func commentedBlocks(file string) []block {
	var blocks []block
	var cur []string
	start, indent := 0, -1
	lines := strings.Split(file, "\n")
	flush := func(end int) {
		if len(cur) > 0 {
			blocks = append(blocks, block{strings.Join(cur, "\n"), start, end})
		}
		cur, indent = nil, -1
	}
	keyLine := regexp.MustCompile(`^[a-z_]+:( |$)`)
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		text, ok := strings.CutPrefix(trimmed, "# ")
		at := len(line) - len(trimmed)
		switch {
		case !ok:
			flush(i)
		case keyLine.MatchString(text):
			flush(i)
			cur, start, indent = []string{text}, i, at
		case cur != nil && at == indent && strings.HasPrefix(text, "  "):
			cur = append(cur, text)
		default:
			flush(i)
		}
	}
	flush(len(lines))
	return blocks
}

func hasPath(v any, path []string) bool {
	if len(path) == 0 {
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	next, ok := m[path[0]]
	return ok && hasPath(next, path[1:])
}

package polyglot

import (
	"context"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/initconfig"
)

// TestInitOpenAPI writes the Node server's config from its OpenAPI
// document (node/openapi.yaml, written as its team would) with `init
// --openapi`, makes only the edits getting-started.md asks for (the TTL,
// the two users' secrets, an evidence source, the base URL) and runs the
// catalog under --strict: no fail, no warn.
func TestInitOpenAPI(t *testing.T) {
	b := build{name: "node-openapi", lang: "node",
		// On main today init writes the capture with the document's
		// example charge id, which does not exist: the run stops at its
		// start (exit 4, no verdict). init --openapi's setup: proposal
		// (issue 33 point 2) makes each key's charge.
		refusal: "the normal request does not succeed",
		pending: map[string]string{
			// init guesses id_pointer /id on the PATCH (every answer is
			// acct_1): issue 37 point 1, as node-id-pointer.
			"scope/other-user-isolated":      "the PATCH's shared id read as a leak",
			"scope/other-user-in-flight":     "the PATCH's shared id read as a leak",
			"security/cross-principal-guess": "the PATCH's shared id read as a leak",
			"scope/case-sensitive":           "the PATCH's shared id read as one key",
			"security/hostile-keys":          "the PATCH's shared id read as a replay",
		}}
	base := start(t, b, 3*time.Second)
	out, err := initconfig.FromOpenAPI(context.Background(), initconfig.OpenAPIOptions{Source: "node/openapi.yaml", Command: "idemcheck init --openapi"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("IDEMCHECK_TOKEN_1", "tok_alice")
	t.Setenv("IDEMCHECK_TOKEN_2", "tok_bob")
	edited := newcomerEdits(out, base, "oracle:\n  url: /_test/executions?key={key}\n  pointer: /executions\n")
	tg, profile, err := apispec.ParseConfig(edited)
	if err != nil {
		t.Fatalf("%v\n%s", err, edited)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b.runConfig(ctx, t, tg, profile, edited)
}

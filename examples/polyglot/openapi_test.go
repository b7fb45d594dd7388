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
	pending := map[string]string{
		// init guesses the mutation amount 1201 for the capture; the
		// setup's charge is 1200 and the API refuses to capture more (400),
		// which the schema does not say: a guess to check.
		"security/cross-principal-guess": "init's mutation amount 1201 exceeds the setup's charge: 400",
	}
	for id, why := range actionFalseVerdicts {
		pending[id] = why
	}
	// These need the slow variant init leaves a TODO.
	delete(pending, "lost/retry-storm")
	delete(pending, "lost/client-hangup")
	b := build{name: "node-openapi", lang: "node", pending: pending}
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

package initconfig

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
)

// TestFromOpenAPISetup: rule: an operation whose path takes the id of a
// resource another operation creates (a capture, a PATCH) gets a setup:
// that creates a fresh one per key, bound into its path, and is an update.
func TestFromOpenAPISetup(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "charges.yaml")
	if err := os.WriteFile(doc, []byte(`openapi: 3.0.3
info: {title: Charges, version: '1'}
servers: [{url: 'http://127.0.0.1:1'}]
paths:
  /charges:
    post:
      operationId: createCharge
      requestBody: {content: {application/json: {schema: {type: object, properties: {amount: {type: integer, example: 1000}}}}}}
      responses: {'201': {description: created, content: {application/json: {schema: {type: object, properties: {id: {type: string}}}}}}}
  /charges/{charge}/capture:
    post:
      operationId: captureCharge
      parameters: [{name: charge, in: path, required: true, schema: {type: string}}]
      responses: {'200': {description: captured, content: {application/json: {schema: {type: object, properties: {id: {type: string}, status: {type: string}}}}}}}
  /charges/{charge}:
    patch:
      operationId: updateCharge
      parameters: [{name: charge, in: path, required: true, schema: {type: string}}]
      requestBody: {content: {application/json: {schema: {type: object, properties: {description: {type: string, example: x}}}}}}
      responses: {'200': {description: updated, content: {application/json: {schema: {type: object, properties: {id: {type: string}}}}}}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := FromOpenAPI(context.Background(), OpenAPIOptions{Source: doc, KeyHeader: "Idempotency-Key"})
	if err != nil {
		t.Fatal(err)
	}
	tg, _, err := apispec.ParseConfig(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := map[string]string{"createCharge": "", "captureCharge": "/charges/{setup.id}/capture", "updateCharge": "/charges/{setup.id}"}
	for _, op := range tg.Operations {
		path, ok := want[op.Name]
		switch {
		case !ok:
			t.Errorf("unexpected operation %s", op.Name)
		case path == "" && op.Setup != nil:
			t.Errorf("%s: a setup for a create", op.Name)
		case path != "" && (op.Path != path || op.Setup == nil || op.Setup.Path != "/charges" || !op.Updates()):
			t.Errorf("%s: path %s, setup %+v, kind %q; want %s on a fresh charge, kind update\n%s", op.Name, op.Path, op.Setup, op.Kind, path, out)
		}
	}
}

package demotest

import (
	"net/http/httptest"
	"testing"

	"github.com/idemcheck/idemcheck/reference/demo"
)

// Serve starts the demo app with o on 127.0.0.1 and returns its base URL;
// server and app are closed when t ends.
func Serve(t testing.TB, o demo.Options) string {
	t.Helper()
	app, err := demo.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(func() { srv.Close(); _ = app.Close() })
	return srv.URL
}

// CancelOperation is a config's operations entry (YAML, indented for an
// operations: list) for the reference's cancel of a charge, each key on a
// fresh charge made by its setup: an update whose answers carry a version.
const CancelOperation = `  - name: cancel-charge
    method: POST
    path: /v1/charges/{setup.id}/cancel
    kind: update
    id_pointer: /id
    version_pointer: /version
    headers: {Content-Type: application/json}
    body: {reason: requested}
    setup: {method: POST, path: /v1/charges, body: {amount: 1000, currency: usd}}
`

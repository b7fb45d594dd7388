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

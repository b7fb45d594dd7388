// Package gotest shows idemcheck from a project's own go test, in a module
// of its own (as your service would be).
package gotest

import (
	"os"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// TestServer checks a server that already runs, e.g.
//
//	idemcheck serve --addr 127.0.0.1:8080 &
//	IDEMCHECK_TARGET=http://127.0.0.1:8080 go test
//
// A service with its own API shape passes Config{Config: "idemcheck.yaml"}.
func TestServer(t *testing.T) {
	target := os.Getenv("IDEMCHECK_TARGET")
	if target == "" {
		t.Skip("set IDEMCHECK_TARGET to the URL of a server following the reference contract (idemcheck serve)")
	}
	idemchecktest.Run(t, idemchecktest.Config{Target: target})
}

// TestMiddleware checks an http.Handler in-process: here idemcheck's
// reference middleware around its demo app, with a short retention so the
// expiry cases run.
func TestMiddleware(t *testing.T) {
	app, err := demo.New(demo.Options{TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	idemchecktest.Handler(t, app, idemchecktest.Config{TTL: 3 * time.Second})
}

package idemchecktest_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/internal/knobless"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestHandlerWithDouble: the go-test face starts the config's downstream
// double, as run does: an API without knobs whose provider is the double
// passes the effect-counting cases on the double's counts.
func TestHandlerWithDouble(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	shop := knobless.New(knobless.Options{ProviderURL: "http://" + addr})
	t.Cleanup(func() { _ = shop.Close() })
	cfg := filepath.Join(t.TempDir(), "idemcheck.yaml")
	// base_url is replaced by Handler's server.
	if err := os.WriteFile(cfg, []byte(knobless.Config("http://127.0.0.1:1", addr, "{downstream: payments}")), 0o600); err != nil {
		t.Fatal(err)
	}
	var rep *scenarios.Report
	t.Run("catalog", func(t *testing.T) {
		idemchecktest.Handler(t, shop, idemchecktest.Config{Config: cfg},
			idemchecktest.Only("replay/single-execution", "concurrent/in-flight-conflict", "errors/business-error-kept", "missing/rejected"),
			idemchecktest.OnReport(func(r *scenarios.Report) { rep = r }))
	})
	if rep == nil || len(rep.Results) != 4 {
		t.Fatalf("report %+v: want the 4 selected instances", rep)
	}
	for _, r := range rep.Results {
		if r.Status == scenarios.Inconclusive && r.ID == "concurrent/in-flight-conflict" {
			continue // an overlap a loaded machine could not make
		}
		if r.Status != scenarios.Pass || (!strings.Contains(r.Observed, "oracle") && r.ID != "errors/business-error-kept") {
			t.Errorf("%s: %s %q %s, want pass counted by the double", r.Name(), r.Status, r.Observed, r.Reason)
		}
	}
}

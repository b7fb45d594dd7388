package main

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reference/demo"
)

// TestRunHTTP2: `run --http2` against `serve --h2c` exits 0 with every
// MUST verified, and the JSON report, the JUnit properties and the
// attestation record HTTP/2; a defect HTTP/1.1 catches is caught over
// HTTP/2 too; chaos refuses --http2 in one line.
func TestRunHTTP2(t *testing.T) {
	serve := func(defects ...string) string {
		return startServe(t, serveFlags{h2c: true, ttl: 3 * time.Second, lease: 5 * time.Second, store: "memory", maxBody: 1 << 20, defects: defects})
	}
	good, defective := serve(), serve("no-query-fingerprint")
	dir := t.TempDir()
	jsonPath, junit, attest := filepath.Join(dir, "r.json"), filepath.Join(dir, "j.xml"), filepath.Join(dir, "a.json")
	r := runCLI(t, "run", "--target", good, "--http2", "--ttl", "3s", "--json", jsonPath, "--junit", junit, "--attest", attest, "--subject", "api=sha256:"+strings.Repeat("ab", 32))
	if r.code != exitOK {
		t.Fatalf("run --http2 against serve --h2c: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, " over HTTP/2,") || !strings.Contains(r.stdout, " 0 failed, 0 warned, ") {
		t.Errorf("the console names the protocol:\n%s", r.stdout)
	}
	doc := readJSON(t, jsonPath)
	conf, _ := doc["conformance"].(map[string]any)
	must, _ := conf["must"].(map[string]any)
	if doc["protocol"] != "HTTP/2" || must == nil || must["verified"] != must["total"] {
		t.Errorf("--json: protocol %v, MUSTs %v; want HTTP/2, every MUST verified", doc["protocol"], must)
	}
	var suites struct {
		Props []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"testsuite>properties>property"`
	}
	if b, err := os.ReadFile(junit); err != nil || xml.Unmarshal(b, &suites) != nil {
		t.Fatalf("--junit: %v", err)
	}
	found := false
	for _, p := range suites.Props {
		found = found || (p.Name == "protocol" && p.Value == "HTTP/2")
	}
	if !found {
		t.Errorf("--junit: no property protocol=HTTP/2")
	}
	if b, err := os.ReadFile(attest); err != nil || !regexp.MustCompile(`"protocol":\s*"HTTP/2"`).Match(b) {
		t.Errorf("--attest: %v, no protocol HTTP/2 in %.300s", err, b)
	}

	if r := runCLI(t, "run", "--target", defective, "--http2", "--run", "mismatch/changed-body"); r.code != exitFail ||
		!strings.Contains(r.stdout, "authorise-only: replayed the old response for a request with another query") {
		t.Errorf("no-query-fingerprint over HTTP/2: exit %d, want 1 naming the query\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	r = runCLI(t, "chaos", "--target", good, "--http2")
	if r.code != exitUsage || !strings.Contains(r.stderr, "chaos injects its faults over HTTP/1.1 only") || strings.Count(strings.TrimRight(r.stderr, "\n"), "\n") != 0 {
		t.Errorf("chaos --http2: exit %d, want 2 and one line saying why\n%s", r.code, r.stderr)
	}
}

// TestLoadHTTP2: `load --http2` attacks over HTTP/2 (h2c): the server sees
// no HTTP/1.1 request.
func TestLoadHTTP2(t *testing.T) {
	app, err := demo.New(demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var h1, h2 atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			h2.Add(1)
		} else {
			h1.Add(1)
		}
		app.ServeHTTP(w, r)
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(func() { srv.Close(); app.Close() })
	r := runCLI(t, "load", "--target", srv.URL, "--http2", "--mode", "mix", "--rate", "200", "--duration", "1s", "--threshold", "violations==0")
	if r.code != exitOK {
		t.Fatalf("load --http2: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if h1.Load() != 0 || h2.Load() < 100 {
		t.Errorf("the server saw %d HTTP/1.1 and %d HTTP/2 requests; want every one HTTP/2", h1.Load(), h2.Load())
	}
	// The report names the protocol it spoke.
	if want := "protocol HTTP/2, latency timed from each call's intended send time in the rate plan (open model)"; !strings.Contains(r.stdout, want) {
		t.Errorf("load --http2's report lacks %q:\n%s", want, r.stdout)
	}
}

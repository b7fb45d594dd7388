package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence/double"
	"github.com/idemcheck/idemcheck/internal/testenv"
)

const doubleConfig = `base_url: http://127.0.0.1:1
downstream:
  listen: %s
  routes:
    - name: payments
      method: POST
      path: /v1/payments
      response: {status: 200, headers: {Content-Type: application/json}, body: {id: "pay_{seq}", status: succeeded}}
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDoubleCLIErrors: a bad config, a missing section and a port in use
// are one line each, exit 2.
func TestDoubleCLIErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	good := writeFile(t, "good.yaml", strings.Replace(doubleConfig, "%s", "127.0.0.1:0", 1))
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no-config", nil, "--config is required"},
		{"no-section", []string{"--config", writeFile(t, "a.yaml", "base_url: http://x\n")}, "downstream: no such section"},
		{"bad-route", []string{"--config", writeFile(t, "b.yaml", "downstream:\n  routes: [{name: p, path: v1}]\n")}, `downstream.routes[0].path "v1"`},
		{"unknown-field", []string{"--config", writeFile(t, "c.yaml", "downstream:\n  routes: [{name: p, path: /v1, respond: {}}]\n")}, `unknown field "respond"`},
		{"port-in-use", []string{"--config", writeFile(t, "d.yaml", strings.Replace(doubleConfig, "%s", busy.Addr().String(), 1))},
			"downstream.listen " + busy.Addr().String() + ": bind: address already in use"},
		{"flag-port-in-use", []string{"--config", good, "--listen", busy.Addr().String()}, "--listen " + busy.Addr().String() + ": bind"},
		{"bad-listen", []string{"--config", good, "--listen", "nope"}, `--listen "nope"`},
	} {
		r := runCLI(t, append([]string{"double"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != exitUsage || len(lines) != 1 || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line with %q", tc.name, r.code, r.stderr, tc.stderr)
		}
	}
	// run starts the config's double before any request: its port in use
	// is the same one line, exit 2.
	api := httptest.NewServer(http.NotFoundHandler())
	defer api.Close()
	cfg := writeFile(t, "run.yaml", "base_url: "+api.URL+`
principals: [{name: a, headers: {Authorization: Bearer a}}]
downstream: {listen: "`+busy.Addr().String()+`", routes: [{name: payments, path: /v1/payments}]}
oracle: {downstream: payments}
operations: [{name: o, method: POST, path: /o, body: {ref: ""}, marker: /ref}]
`)
	for _, command := range []string{"run", "chaos", "load"} {
		r := runCLI(t, command, "--config", cfg)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if want := "downstream.listen " + busy.Addr().String() + ": bind: address already in use"; r.code != exitUsage || len(lines) != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s with the double's port in use: exit %d, stderr %q; want exit 2 and one line with %q", command, r.code, r.stderr, want)
		}
	}
}

// TestDoubleCLI: the standalone double answers its routes, serves its
// journal and stops on SIGTERM.
func TestDoubleCLI(t *testing.T) {
	cfg := writeFile(t, "double.yaml", strings.Replace(doubleConfig, "%s", "127.0.0.1:0", 1))
	cmd := exec.Command(testenv.BuildIdemcheck(t), "double", "--config", cfg)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // already exited when the test passes
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("no output; stderr %s", stderr.String())
	}
	first := lines.Text()
	i := strings.Index(first, "http://")
	if i < 0 || !strings.Contains(first, "payments POST /v1/payments") {
		t.Fatalf("first line %q: want the URL and the routes", first)
	}
	base := strings.Fields(first[i:])[0]
	c := &http.Client{Timeout: 5 * time.Second}
	for range 2 {
		resp, err := c.Post(base+"/v1/payments", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := c.Get(base + double.JournalPath)
	if err != nil {
		t.Fatal(err)
	}
	var snap double.Snapshot
	err = json.NewDecoder(resp.Body).Decode(&snap)
	resp.Body.Close()
	if err != nil || snap.Totals.Calls != 2 || len(snap.Calls) != 2 || snap.Routes[0].Untokened != 2 {
		t.Fatalf("journal: %+v %v", snap, err)
	}
	c.CloseIdleConnections()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr %s", err, stderr.String())
	}
	if !strings.Contains(string(rest), "stopped after 2 calls") {
		t.Errorf("output after SIGTERM %q: want the totals", rest)
	}
}

// TestDownstreamExample: examples/downstream.yaml (the help's example)
// loads, with the double, its oracle, marker and variants.
func TestDownstreamExample(t *testing.T) {
	tg, _, err := apispec.LoadConfig("../../examples/downstream.yaml")
	if err != nil {
		t.Fatal(err)
	}
	op := tg.Operations[0]
	if tg.Downstream == nil || tg.Oracle.Downstream != "payments" || op.Marker == nil || op.Variants[apispec.VariantSlow].Downstream == nil {
		t.Errorf("examples/downstream.yaml: %+v", tg)
	}
}

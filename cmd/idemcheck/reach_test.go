package main

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// faceRuns are a short run, load and chaos against the target args name.
func faceRuns(args ...string) map[string][]string {
	return map[string][]string{
		"run":   append([]string{"run", "--run", "replay/*"}, args...),
		"load":  append([]string{"load", "--mode", "mix", "--pool", "20", "--rate", "200", "--duration", "500ms", "--threshold", "violations==0"}, args...),
		"chaos": append([]string{"chaos", "--ops", "60", "--concurrency", "4", "--fault", "drop-response:0.3"}, args...),
	}
}

// TestReachAnyTarget: every face works against a target that is not
// 127.0.0.1 (another loopback address) and against https://localhost with
// a private CA given by --ca-cert (HTTP/2 negotiated).
func TestReachAnyTarget(t *testing.T) {
	pki := demotest.NewPKI(t)
	targets := []struct {
		name        string
		args        []string
		explanation string
	}{
		{"127.0.0.2", []string{"--target", demotest.ServeOn(t, demotest.App(t, demo.Options{}), "127.0.0.2:0")},
			"a host other than 127.0.0.1 is no longer refused"},
		{"https-localhost", []string{"--target", pki.ServeTLS(t, demotest.App(t, demo.Options{}), false), "--ca-cert", pki.CAFile},
			"an https target whose certificate a private CA signs"},
	}
	for _, tg := range targets {
		for face, args := range faceRuns(tg.args...) {
			t.Run(tg.name+"/"+face, func(t *testing.T) {
				if r := runCLI(t, args...); r.code != exitOK {
					t.Fatalf("%s: %s exit %d: %s\n%s", tg.explanation, face, r.code, r.stderr, lastLines(r.stdout, 20))
				}
			})
		}
	}
}

const reachConfig = `
base_url: %s
principals:
  - name: alice
    headers: {Authorization: "Bearer ${IDEMCHECK_TOKEN}"}
oracle: {url: "/v1/effects?key={key}", pointer: /executions}
%s
operations:
  - name: charges
    method: POST
    path: /v1/charges
    body: {amount: 1000, currency: usd}
    id_pointer: /id
`

// TestSecretNeverReported: a token given as ${IDEMCHECK_TOKEN} reaches the
// server yet appears in no report (JSON, JUnit, Markdown, HTML, console,
// chaos history and JSON, load JSON and results), and the curl
// reproductions read it from the environment. The config's base_url is
// dead: --base-url points every face at the live server.
func TestSecretNeverReported(t *testing.T) {
	const token = "s3cr3t-t0ken-for-reports"
	t.Setenv("IDEMCHECK_TOKEN", token)
	base := demotest.ServeOn(t, demotest.App(t, demo.Options{}), "127.0.0.1:0")
	dir := t.TempDir()
	cfg := writeTemp(t, "api.yaml", fmt.Sprintf(reachConfig, closedPort(t), ""))
	f := func(name string) string { return filepath.Join(dir, name) }
	runs := []struct {
		args  []string
		files []string
	}{
		{[]string{"run", "--config", cfg, "--base-url", base, "--run", "replay/*", "-v", "--json", f("r.json"),
			"--junit", f("r.xml"), "--markdown", f("r.md"), "--html", f("r.html")}, []string{"r.json", "r.xml", "r.md", "r.html"}},
		{[]string{"chaos", "--config", cfg, "--base-url", base, "--ops", "40", "--fault", "drop-response:0.3",
			"--history", f("h.jsonl"), "--json", f("c.json")}, []string{"h.jsonl", "c.json"}},
		{[]string{"load", "--config", cfg, "--base-url", base, "--mode", "mix", "--pool", "10", "--rate", "100", "--duration", "300ms",
			"--json", f("l.json"), "--results", f("l.bin"), "--html", f("l.html")}, []string{"l.json", "l.bin", "l.html"}},
	}
	for _, rn := range runs {
		r := runCLI(t, rn.args...)
		if r.code != exitOK {
			t.Fatalf("%s: exit %d: %s\n%s", rn.args[0], r.code, r.stderr, lastLines(r.stdout, 20))
		}
		if strings.Contains(r.stdout+r.stderr, token) {
			t.Errorf("%s: the token is on the console", rn.args[0])
		}
		for _, name := range rn.files {
			b, err := os.ReadFile(f(name))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), token) {
				t.Errorf("%s: the token is in %s", rn.args[0], name)
			}
		}
	}
	// The curl line ends the quoted literal before the variable so the
	// shell expands it (JSON escapes the double quotes).
	if b, _ := os.ReadFile(f("r.json")); !strings.Contains(string(b), `'Authorization: Bearer '\"${IDEMCHECK_TOKEN}\"`) {
		t.Errorf("the JSON report's curl does not read $IDEMCHECK_TOKEN from the environment")
	}
	if r := runCLI(t, "run", "--config", cfg, "--run", "replay/*"); r.code != exitUnreachable {
		t.Errorf("without --base-url the config's dead base_url is used: exit %d, want %d", r.code, exitUnreachable)
	}
}

// TestServerIssuedKeysCLI: with key_source, load and chaos send only keys
// the server issued, and a key service that fails is a one-line error.
func TestServerIssuedKeysCLI(t *testing.T) {
	t.Setenv("IDEMCHECK_TOKEN", "alice")
	k := demotest.NewKeyIssuer(demotest.App(t, demo.Options{}))
	base := demotest.ServeOn(t, k, "127.0.0.1:0")
	cfg := writeTemp(t, "keys.yaml", fmt.Sprintf(reachConfig, base, "key_source: {path: /keys, pointer: /data/key}"))
	for _, args := range [][]string{
		{"load", "--config", cfg, "--mode", "mix", "--pool", "10", "--rate", "100", "--duration", "300ms", "--threshold", "violations==0"},
		{"chaos", "--config", cfg, "--ops", "40", "--fault", "drop-response:0.3"},
		{"run", "--config", cfg, "--run", "replay/*"},
	} {
		if r := runCLI(t, args...); r.code != exitOK {
			t.Fatalf("%s: exit %d: %s\n%s", args[0], r.code, r.stderr, lastLines(r.stdout, 20))
		}
	}
	// 40 chaos operations and 10 pool keys at least, all issued.
	if issued, bad := k.Counts(); issued < 50 || bad != 0 {
		t.Fatalf("%d keys issued, %d requests with a key not issued: want every key from key_source", issued, bad)
	}
	k.Fail.Store(true)
	for _, face := range []string{"load", "chaos", "run"} {
		r := runCLI(t, face, "--config", cfg)
		if r.code != exitUsage || !strings.Contains(r.stderr, "key_source POST "+base+"/keys: status 503") {
			t.Errorf("%s with a failing key service: exit %d, stderr %q: want exit %d naming the key request", face, r.code, r.stderr, exitUsage)
		}
	}
}

// TestKeyFormatEveryFace: an API that refuses any key but a bare UUID,
// declared as profile key_format uuid, gets only UUIDs from every face:
// run, load (whose default keys are sequence keys) and chaos, with and
// without --hash-keys (whose hashes are hex). A refused key would be a
// 400 the faces count as the API's failure.
func TestKeyFormatEveryFace(t *testing.T) {
	t.Setenv("IDEMCHECK_TOKEN", "alice")
	app := demotest.App(t, demo.Options{})
	var mu sync.Mutex
	refused := map[string]bool{}
	uuidOnly := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Idempotency-Key"); v != "" && r.Method != http.MethodGet {
			if k := strings.Trim(v, `"`); uuid.Validate(k) != nil || len(k) != 36 {
				mu.Lock()
				refused[v] = true
				mu.Unlock()
				http.Error(w, "Idempotency-Key must be a UUID", http.StatusBadRequest)
				return
			}
		}
		app.ServeHTTP(w, r)
	})
	base := demotest.ServeOn(t, uuidOnly, "127.0.0.1:0")
	cfg := writeTemp(t, "uuid.yaml", fmt.Sprintf(reachConfig, base, "profile: {overrides: {key_format: uuid}}"))
	for _, args := range [][]string{
		{"load", "--config", cfg, "--mode", "mix", "--pool", "10", "--rate", "100", "--duration", "300ms", "--threshold", "violations==0"},
		{"load", "--config", cfg, "--mode", "hit", "--pool", "10", "--rate", "100", "--duration", "300ms", "--hash-keys", "--key-seed", "orders"},
		{"chaos", "--config", cfg, "--ops", "30", "--fault", "drop-response:0.3"},
		{"chaos", "--config", cfg, "--ops", "30", "--fault", "drop-response:0.3", "--hash-keys"},
		{"run", "--config", cfg, "--run", "replay/*", "--hash-keys"},
	} {
		if r := runCLI(t, args...); r.code != exitOK {
			t.Errorf("%s: exit %d: %s\n%s", strings.Join(args, " "), r.code, r.stderr, lastLines(r.stdout, 20))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refused) > 0 {
		t.Errorf("%d keys were not UUIDs, e.g. %v", len(refused), slices.Collect(maps.Keys(refused))[:1])
	}
}

package scenarios_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

// TestTargetTLS: the request layer reaches https targets the way a user
// configures them, and speaks HTTP/2 when the server negotiates it.
func TestTargetTLS(t *testing.T) {
	pki := demotest.NewPKI(t)
	var mu sync.Mutex
	protos := map[string]bool{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos[r.Proto] = true
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	plain, mutual := pki.ServeTLS(t, h, false), pki.ServeTLS(t, h, true)
	cases := []struct {
		name, base  string
		tls         apispec.TLS
		wantErr     string // "" = reachable
		explanation string
	}{
		{"system roots", plain, apispec.TLS{}, "certificate", "a private CA is not trusted by default"},
		{"ca-cert", plain, apispec.TLS{CACert: pki.CAFile}, "", "--ca-cert trusts the test CA"},
		{"insecure", plain, apispec.TLS{InsecureSkipVerify: true}, "", "--insecure-skip-verify skips verification"},
		{"client cert", mutual, apispec.TLS{CACert: pki.CAFile, ClientCert: pki.ClientCert, ClientKey: pki.ClientKey}, "", "mutual TLS with a client certificate"},
		// TLS 1.3 reports the refusal as a reset or a certificate alert.
		{"no client cert", mutual, apispec.TLS{CACert: pki.CAFile}, "localhost", "a server demanding a client certificate refuses a client without one"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := apispec.FromURL(tc.base, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := tg.SetTLS(tc.tls); err != nil {
				t.Fatal(err)
			}
			c := wire.Client(tg, 5*time.Second)
			defer c.CloseIdleConnections()
			_, err = wire.Preflight(context.Background(), tg, wire.NewCarrier(tg, c), c)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("%s: %v", tc.explanation, err)
			case tc.wantErr != "" && (!errors.Is(err, apispec.ErrUnreachable) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("%s: got %v, want ErrUnreachable naming %q", tc.explanation, err, tc.wantErr)
			}
		})
	}
	if !protos["HTTP/2.0"] {
		t.Errorf("the server saw %v: want HTTP/2.0 negotiated over TLS", protos)
	}
	if _, err := (apispec.TLS{CACert: "/nonexistent.pem"}).Config(); err == nil || !strings.Contains(err.Error(), "ca_cert") {
		t.Errorf("a missing CA file: got %v, want an error naming ca_cert", err)
	}
}

const secretConfig = `
base_url: %s
key_syntax: sf-string
secret_headers: [X-Api-Key]
principals:
  - name: alice
    headers: {Authorization: "Bearer ${IDEMCHECK_TEST_TOKEN}", X-Api-Key: literal-api-key-42}
operations:
  - name: charges
    method: POST
    path: /v1/charges
    body: {amount: 1000, currency: usd}
    id_pointer: /id
`

// TestSecretsRedacted: a ${ENV} credential and a secret_headers value are
// sent to the server but appear in no exchange, and the curl reproduction
// reads the variable from the environment.
func TestSecretsRedacted(t *testing.T) {
	const token = "tok-5ecr3t-value-77"
	t.Setenv("IDEMCHECK_TEST_TOKEN", token)
	var seen sync.Map
	app := demotest.App(t, demo.Options{TTL: demoTTL, Lease: demoLease})
	base := demotest.ServeOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Authorization"), true)
		app.ServeHTTP(w, r)
	}), "127.0.0.2:0")
	tg, p, err := apispec.ParseConfig(fmt.Appendf(nil, secretConfig, base))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"replay/*"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := seen.Load("Bearer " + token); !ok {
		t.Fatal("the server never received the expanded token")
	}
	exchanges := 0
	for _, r := range rep.Results {
		if r.Status != scenarios.Pass && r.Status != scenarios.Skip {
			t.Errorf("%s: %s %s (on 127.0.0.2 with a secret principal every configured replay case passes)", r.Name(), r.Status, r.Reason)
		}
		for _, x := range r.Exchanges {
			exchanges++
			dump := fmt.Sprintf("%v %s %s", x.Request.Header, x.Request.URL, x.Curl())
			if x.Response != nil {
				dump += fmt.Sprintf("%v %s", x.Response.Header, x.Response.Body)
			}
			if strings.Contains(dump, token) || strings.Contains(dump, "literal-api-key-42") {
				t.Fatalf("%s: a secret leaked into the evidence: %s", r.Name(), dump)
			}
			if c := x.Curl(); x.Label != "oracle" && !strings.Contains(c, `'Authorization: Bearer '"${IDEMCHECK_TEST_TOKEN}"`) {
				t.Fatalf("curl does not read the token from the environment: %s", c)
			}
		}
	}
	if exchanges == 0 {
		t.Fatal("no exchange recorded")
	}
	t.Setenv("IDEMCHECK_TEST_TOKEN", "")
	if _, _, err := apispec.ParseConfig(fmt.Appendf(nil, strings.ReplaceAll(secretConfig, "IDEMCHECK_TEST_TOKEN", "IDEMCHECK_UNSET_VAR_1"), base)); err == nil ||
		!strings.Contains(err.Error(), "principals[0].headers.Authorization: ${IDEMCHECK_UNSET_VAR_1} is not set") {
		t.Errorf("an unset variable: got %v, want an error naming the field and the variable", err)
	}
}

// TestServerIssuedKeys: with key_source every key a case sends was issued
// by the server, and a key service that fails stops the run with an error
// naming key_source.
func TestServerIssuedKeys(t *testing.T) {
	k := demotest.NewKeyIssuer(demotest.App(t, demo.Options{TTL: demoTTL, Lease: demoLease}))
	base := demotest.ServeOn(t, k, "127.0.0.1:0")
	cfg := fmt.Sprintf(`
base_url: %s
principals: [{name: alice, headers: {Authorization: Bearer alice}}]
oracle: {url: "/v1/effects?key={key}", pointer: /executions}
key_source: {method: POST, path: /keys, body: {purpose: test}, pointer: /data/key}
operations:
  - {name: charges, method: POST, path: /v1/charges, body: {amount: 1000, currency: usd}, id_pointer: /id}
`, base)
	tg, p, err := apispec.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"replay/*", "mismatch/*"}})
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	for _, r := range rep.Results {
		switch r.Status {
		case scenarios.Pass:
			passed++
		case scenarios.Skip: // not configured: sends nothing
		default:
			t.Errorf("%s: %s %s", r.Name(), r.Status, r.Reason)
		}
	}
	issued, bad := k.Counts()
	if bad != 0 || passed == 0 || issued < passed {
		t.Errorf("%d keys issued for %d passing cases, %d requests with a key not issued: want every key from key_source", issued, passed, bad)
	}
	k.Fail.Store(true)
	_, err = scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"replay/*"}})
	if !errors.Is(err, apispec.ErrKeySource) || !strings.Contains(err.Error(), "POST "+base+"/keys: status 503") {
		t.Errorf("a failing key service: got %v, want ErrKeySource naming the request and its status", err)
	}
}

// TestHashKeysInRun: --hash-keys makes run's keys business-id hashes of
// the seed, and the report says which seed repeats them.
func TestHashKeysInRun(t *testing.T) {
	base := demotest.ServeOn(t, demotest.App(t, demo.Options{TTL: demoTTL, Lease: demoLease}), "127.0.0.1:0")
	tg, p, err := scenarios.Selection{Target: base, HashKeys: true, KeySeed: "orders-7"}.Load()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"replay/same-status"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	gen := apispec.HashKeys("orders-7")
	for n := uint64(1); n <= 20; n++ {
		want[tg.KeyValue(gen(n))] = true
	}
	sent := 0
	for _, r := range rep.Results {
		for _, x := range r.Exchanges {
			if k := x.Request.Header.Get("Idempotency-Key"); k != "" {
				sent++
				if !want[k] {
					t.Errorf("%s sent key %s: not one of SHA-256(orders-7:n)", r.Name(), k)
				}
			}
		}
	}
	if sent == 0 || len(rep.Notes) == 0 || !strings.Contains(rep.Notes[0], "--key-seed orders-7") {
		t.Errorf("%d keys sent, notes %q: want hashed keys and a note naming the seed", sent, rep.Notes)
	}
}

// TestSelectionReach: --base-url, the TLS flags and the key flags are
// checked before any traffic; each error is one line naming the flag.
func TestSelectionReach(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "api.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, secretConfig, "http://127.0.0.1:1"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("IDEMCHECK_TEST_TOKEN", "x")
	cases := []struct {
		name        string
		sel         scenarios.Selection
		wantErr     string // "" = loads
		wantBase    string
		explanation string
	}{
		{"base-url", scenarios.Selection{Config: cfg, BaseURL: "https://staging.example.test/api/"}, "", "https://staging.example.test/api",
			"--base-url replaces the config's base_url, trailing slash trimmed"},
		{"no base-url", scenarios.Selection{Config: cfg}, "", "http://127.0.0.1:1", "the config's base_url otherwise"},
		{"bad base-url", scenarios.Selection{Config: cfg, BaseURL: "staging"}, `--base-url "staging"`, "", "a relative URL is refused"},
		{"grpc base-url for http operations", scenarios.Selection{Config: cfg, BaseURL: "grpc://127.0.0.1:9"}, "the config's operations are HTTP requests", "",
			"an HTTP config's requests are never sent to a gRPC server"},
		{"http base-url for rpc operations", scenarios.Selection{Config: "../examples/grpc.yaml", BaseURL: "http://127.0.0.1:9"}, "the config's operations are RPCs", "",
			"a gRPC config's RPCs are never sent to an HTTP URL (a config error, not an unreachable API)"},
		{"grpc base-url for rpc operations", scenarios.Selection{Config: "../examples/grpc.yaml", BaseURL: "grpc://127.0.0.1:9"}, "", "grpc://127.0.0.1:9",
			"a gRPC config takes another gRPC address"},
		{"grpc replica of a grpc target", scenarios.Selection{Config: "../examples/grpc.yaml", Replicas: []string{"grpc://127.0.0.1:9"}}, "", "grpc://127.0.0.1:50051",
			"--replica adds a gRPC server beside the config's base_url, replica A"},
		{"http replica of a grpc target", scenarios.Selection{Config: "../examples/grpc.yaml", Replicas: []string{"http://127.0.0.1:9"}}, `--replica: replicas[1] "http://127.0.0.1:9": want grpc://host:port like base_url`, "",
			"a gRPC target's replicas are gRPC servers of its scheme: the refusal names the flag and the value"},
		{"bare grpc target", scenarios.Selection{Target: "grpc://127.0.0.1:9"}, "a gRPC target needs --config", "",
			"--target grpc:// has no method or key place to call: the error says what does"},
		{"missing ca", scenarios.Selection{Config: cfg, TLS: apispec.TLS{CACert: "/nonexistent/ca.pem"}}, "--ca-cert", "", "a CA file that cannot be read"},
		{"half client cert", scenarios.Selection{Config: cfg, TLS: apispec.TLS{ClientCert: "c.pem"}}, "give both or neither", "", "a certificate without its key"},
		{"seed alone", scenarios.Selection{Config: cfg, KeySeed: "s"}, "--key-seed needs --hash-keys", "", "a seed without hash keys"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg, _, err := tc.sel.Load()
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n")):
				t.Fatalf("%s: got %v, want one line containing %q", tc.explanation, err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatalf("%s: %v", tc.explanation, err)
			case tc.wantErr == "" && tg.BaseURL != tc.wantBase:
				t.Fatalf("%s: base %q, want %q", tc.explanation, tg.BaseURL, tc.wantBase)
			}
		})
	}
}

// TestPreflightWithoutTimeout: a Target built by hand (the library's
// users) may leave Timeout 0, Go's "no bound"; the preflight then takes its
// own 5 s bound instead of an already expired one.
func TestPreflightWithoutTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	tg := &apispec.Target{BaseURL: srv.URL}
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	if _, err := wire.Preflight(context.Background(), tg, wire.NewCarrier(tg, c), c); err != nil {
		t.Fatalf("Timeout 0: %v, want the server reached", err)
	}
}

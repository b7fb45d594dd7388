package polyglot

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/initconfig"
	"github.com/idemcheck/idemcheck/scenarios"
)

// probed is one endpoint a newcomer points `idemcheck init --probe` at.
type probed struct {
	name, lang   string
	method, path string
	body         string
	headers      []string
	tokens       [2]string // IDEMCHECK_TOKEN_1 and _2
	syntax       apispec.KeySyntax
	oracle       string // the evidence block the newcomer adds (docs/evidence.md)
	pending      map[string]string
	// setup, when set, is a charge created before the probe: the probed
	// path names it as {charge}. The run is then left out: a probe's
	// config acts on that one charge, which only its first key may
	// capture (a setup: per key is the config's answer).
	setup bool
}

var probes = []probed{
	{name: "node-charges", lang: "node", method: "POST", path: "/v1/charges", body: `{"amount":1200,"currency":"eur"}`,
		headers: []string{"Authorization: Bearer tok_alice", "Content-Type: application/json"}, tokens: [2]string{"tok_alice", "tok_bob"},
		syntax: apispec.Raw, oracle: "oracle:\n  url: /_test/executions?key={key}\n  pointer: /executions\n"},
	{name: "node-accounts", lang: "node", method: "PATCH", path: "/v1/accounts/acct_1", body: `{"nickname":"savings","limit":500}`,
		headers: []string{"Authorization: Bearer tok_alice", "Content-Type: application/json"}, tokens: [2]string{"tok_alice", "tok_bob"},
		syntax: apispec.Raw, oracle: "oracle:\n  url: /_test/executions?key={key}\n  pointer: /executions\n",
		// The bare form of the quoted key answered version 4 where the
		// quoted key's had version 2, a fresh execution: the answers share
		// their id "acct_1", so init compares whole answers (it read the
		// shared id as a replay and chose sf-string before).
	},
	{name: "node-capture", lang: "node", method: "POST", path: "/v1/charges/{charge}/capture", body: `{"amount":1200}`, setup: true,
		headers: []string{"Authorization: Bearer tok_alice", "Content-Type: application/json"}, tokens: [2]string{"tok_alice", "tok_bob"},
		syntax: apispec.Raw,
		// A capture succeeds once per charge: every exchange after the
		// first gets the business answer 409 charge_already_captured.
		// init's controls (a fresh key in the accepted form, another UUID)
		// are refused alike, so neither the bare key's nor the non-UUID
		// key's 409 is read as the form or the format refused; exchange
		// 1's key bare, another key to this raw server, decides raw.
	},
	{name: "python-orders", lang: "python", method: "POST", path: "/orders", body: `{"item":"book","qty":2}`,
		headers: []string{"X-Auth-Token: u_alice", "Content-Type: application/json"}, tokens: [2]string{"u_alice", "u_bob"},
		syntax: apispec.SFString, oracle: "oracle:\n  url: /debug/executions?key={key}\n  pointer: /executions\n"},
}

var (
	ttlTODO     = regexp.MustCompile(`(?m)^# ttl: .*$`)
	baseURLLine = regexp.MustCompile(`(?m)^base_url: .*$`)
)

// newcomerEdits makes the edits getting-started.md asks for in a config
// init wrote: the TTL (the servers keep keys 3 s), the evidence source and,
// when base is set, the base URL.
func newcomerEdits(out []byte, base, oracle string) []byte {
	edited := ttlTODO.ReplaceAll(out, []byte("ttl: 3s"))
	if base != "" {
		edited = baseURLLine.ReplaceAll(edited, []byte("base_url: "+base))
	}
	return append(edited, "\n"+oracle...)
}

// runConfig runs the catalog under --strict with a config init wrote and
// judges the correct build's report, showing the config when it fails.
func (b build) runConfig(ctx context.Context, t *testing.T, tg *apispec.Target, profile *apispec.Profile, edited []byte) {
	t.Helper()
	rep, err := scenarios.Run(ctx, tg, profile, scenarios.RunOptions{Strict: true})
	if err != nil && b.refusal != "" && strings.Contains(err.Error(), b.refusal) {
		t.Logf("PENDING: the run stops at its start, no verdict: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, edited)
	}
	b.judge(t, rep)
	if t.Failed() {
		t.Logf("the config run:\n%s", edited)
	}
}

// createCharge makes a charge on the Node server, as a newcomer would with
// curl before probing its capture, and returns its id.
func createCharge(t *testing.T, base string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/charges", strings.NewReader(`{"amount":1200,"currency":"eur"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok_alice")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "probe-setup-charge")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var charge struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&charge); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("creating a charge: %d %v", resp.StatusCode, err)
	}
	return charge.ID
}

// TestInitProbe writes each endpoint's config with `init --probe`, makes
// only the edits getting-started.md asks for (the TTL, the two users'
// secrets, an evidence source) and runs the catalog under --strict: a
// correct server must get no fail and no warn.
func TestInitProbe(t *testing.T) {
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			base := start(t, build{name: p.name, lang: p.lang}, 3*time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			path := p.path
			if p.setup {
				path = strings.ReplaceAll(path, "{charge}", createCharge(t, base))
			}
			out, err := initconfig.Probe(ctx, initconfig.ProbeOptions{URL: base + path, Method: p.method, Body: p.body,
				Headers: p.headers, Command: "idemcheck init --probe"})
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("IDEMCHECK_TOKEN_1", p.tokens[0])
			t.Setenv("IDEMCHECK_TOKEN_2", p.tokens[1])
			edited := newcomerEdits(out, "", p.oracle)
			tg, profile, err := apispec.ParseConfig(edited)
			if err != nil {
				t.Fatalf("%v\n%s", err, edited)
			}
			if tg.KeySyntax != p.syntax {
				t.Errorf("init learnt key_syntax %s; the server's is %s\n%s", tg.KeySyntax, p.syntax, out)
			}
			if profile.KeyFormat != "" {
				t.Errorf("init learnt key_format %s; the server takes any token\n%s", profile.KeyFormat, out)
			}
			if p.setup {
				return
			}
			build{name: p.name, pending: p.pending}.runConfig(ctx, t, tg, profile, edited)
		})
	}
}

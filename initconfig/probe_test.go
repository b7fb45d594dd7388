package initconfig

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/examples/variants"
	"github.com/idemcheck/idemcheck/internal/bookings"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// serve runs h on a loopback server for the test.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// twoKeys is the comment of a learnt id pointer.
var twoKeys = regexp.MustCompile(`id_pointer: \S+ # exchanges \d and \d \(two keys\) created "\S+" and "\S+"`)

// TestProbe: against three independently written APIs, the probe finds
// the key syntax each accepts, the created id's pointer, the replay marker
// and the missing-key and mismatch statuses, and the config it writes
// loads as it is once the secrets are set.
func TestProbe(t *testing.T) {
	setTokens(t)
	for _, tc := range []struct {
		name, path, body, header string
		syntax                   apispec.KeySyntax
		id, replayHeader         string
		missing, mismatch        int
		url                      func(t *testing.T) string
	}{
		{"reference", "/v1/charges", `{"amount":1000,"currency":"usd"}`, "Authorization: Bearer alice",
			apispec.SFString, "/id", "Idempotent-Replayed", 400, 422,
			func(t *testing.T) string { return demotest.Serve(t, demo.Options{}) }},
		{"variants-core", "/api/charges", `{"amount":1000,"currency":"EUR"}`, "Authorization: Bearer tok_alice",
			apispec.SFString, "/id", "", 400, 422,
			func(t *testing.T) string { return serve(t, variants.New(variants.Choices{TTL: time.Hour})) }},
		{"bookings", "/v2/bookings", `{"room":"double","nights":2,"guest":{"name":"Ann","email":"ann@example.com"}}`, "X-Api-Key: key_ann",
			apispec.Raw, "/booking/booking_id", "X-Idempotent-Replay", 400, 409,
			func(t *testing.T) string { return serve(t, bookings.New(time.Hour)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keyHeader := ""
			if tc.name == "bookings" {
				keyHeader = "X-Idempotency-Key"
			}
			out, err := Probe(context.Background(), ProbeOptions{URL: tc.url(t) + tc.path, Body: tc.body,
				Headers: []string{tc.header, "Accept: application/json"}, KeyHeader: keyHeader, Command: "idemcheck init --probe"})
			if err != nil {
				t.Fatal(err)
			}
			tg, profile, err := apispec.ParseConfig(out)
			if err != nil {
				t.Fatalf("rule: the config loads once the secrets are set: %v\n%s", err, out)
			}
			op := tg.Operations[0]
			if tg.KeySyntax != tc.syntax || op.IDPointer != tc.id {
				t.Errorf("learnt key syntax %s, id pointer %q; want %s, %q\n%s", tg.KeySyntax, op.IDPointer, tc.syntax, tc.id, out)
			}
			if profile.ReplayHeader != tc.replayHeader {
				t.Errorf("replay header %q, want %q\n%s", profile.ReplayHeader, tc.replayHeader, out)
			}
			if len(profile.MissingStatus) != 1 || profile.MissingStatus[0] != tc.missing ||
				len(profile.MismatchStatus) != 1 || profile.MismatchStatus[0] != tc.mismatch {
				t.Errorf("missing %v, mismatch %v; want [%d], [%d]\n%s", profile.MissingStatus, profile.MismatchStatus, tc.missing, tc.mismatch, out)
			}
			cred, _, _ := strings.Cut(tc.header, ":")
			if strings.Contains(string(out), strings.TrimSpace(strings.SplitN(tc.header, ":", 2)[1])) ||
				!strings.Contains(tg.Principals[1].Headers[cred], "token-two") {
				t.Errorf("rule: the credential given is not written, ${IDEMCHECK_TOKEN_n} is\n%s", out)
			}
			if op.Headers["Accept"] != "application/json" || len(op.Mutations) != 1 {
				t.Errorf("other headers are the operation's (%v); one learnt mutation (%v)", op.Headers, op.Mutations)
			}
			if profile.KeyFormat != "" {
				t.Errorf("key_format %q: these APIs take any key", profile.KeyFormat)
			}
			if !twoKeys.Match(out) || !strings.Contains(string(out), "  7. ") {
				t.Errorf("rule: each learnt value names the exchange that showed it\n%s", out)
			}
		})
	}
}

// TestProbeUUIDKeys: an API that takes only bare UUIDs is learnt as raw
// with key_format uuid, from the exchange a non-UUID key was refused in.
func TestProbeUUIDKeys(t *testing.T) {
	setTokens(t)
	base := serve(t, variants.New(variants.Choices{TTL: time.Hour, UUIDKeys: true}))
	out, err := Probe(context.Background(), ProbeOptions{URL: base + "/api/charges", Body: `{"amount":1,"currency":"EUR"}`,
		Headers: []string{"Authorization: Bearer tok_alice"}})
	if err != nil {
		t.Fatal(err)
	}
	tg, profile, err := apispec.ParseConfig(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if tg.KeySyntax != apispec.Raw || profile.KeyFormat != "uuid" || !strings.Contains(string(out), "key_format: uuid # exchange ") {
		t.Errorf("learnt %s, key_format %q; want raw, uuid\n%s", tg.KeySyntax, profile.KeyFormat, out)
	}
}

// onceOnly is an action a resource takes once (a capture) behind a
// correct key layer: a used key replays, and every other execution after
// the first is refused 409. sf parses the key as an sf-string (a bare key
// is refused 400); otherwise the key is a raw token, quotes and all.
type onceOnly struct {
	sf       bool
	mu       sync.Mutex
	captured bool
	stored   map[string]string
}

func (o *onceOnly) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	if o.sf {
		if len(key) < 3 || key[0] != '"' || key[len(key)-1] != '"' {
			http.Error(w, `{"error":"the key must be an sf-string"}`, http.StatusBadRequest)
			return
		}
		key = key[1 : len(key)-1]
	}
	if key == "" {
		http.Error(w, `{"error":"key required"}`, http.StatusBadRequest)
		return
	}
	if a, ok := o.stored[key]; ok {
		_, _ = w.Write([]byte(a))
		return
	}
	if o.captured {
		http.Error(w, `{"error":"charge_already_captured"}`, http.StatusConflict)
		return
	}
	o.captured, o.stored[key] = true, `{"id":"ch_1","status":"captured"}`
	_, _ = w.Write([]byte(o.stored[key]))
}

// TestProbeOnceOnlyAction: on an action a resource takes once, every
// exchange after the first gets the business refusal. Rule: a refusal
// that a fresh key in the accepted form gets alike is no sign of the key's
// form or format; the accepted key in the other form decides the syntax.
func TestProbeOnceOnlyAction(t *testing.T) {
	setTokens(t)
	for _, tc := range []struct {
		sf   bool
		want apispec.KeySyntax
	}{{false, apispec.Raw}, {true, apispec.SFString}} {
		t.Run(string(tc.want), func(t *testing.T) {
			base := serve(t, &onceOnly{sf: tc.sf, stored: map[string]string{}})
			out, err := Probe(context.Background(), ProbeOptions{URL: base + "/v1/charges/ch_1/capture", Body: `{"amount":1200}`,
				Headers: []string{"Authorization: Bearer tok_alice"}})
			if err != nil {
				t.Fatal(err)
			}
			tg, profile, err := apispec.ParseConfig(out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if tg.KeySyntax != tc.want || profile.KeyFormat != "" {
				t.Errorf("learnt %s, key_format %q; want %s and no format\n%s", tg.KeySyntax, profile.KeyFormat, tc.want, out)
			}
		})
	}
}

// TestProbeHTTP2: against a server that speaks only h2c, --http2's
// probe reaches it (every exchange over HTTP/2) and the config it writes
// says http2: true; without it the probe cannot reach the server.
func TestProbeHTTP2(t *testing.T) {
	setTokens(t)
	app, err := demo.New(demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	srv := httptest.NewUnstartedServer(app)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(false)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	o := ProbeOptions{URL: srv.URL + "/v1/charges", Body: `{"amount":1000,"currency":"usd"}`, Headers: []string{"Authorization: Bearer alice"}, HTTP2: true}
	out, err := Probe(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	tg, _, err := apispec.ParseConfig(out)
	if err != nil || !tg.HTTP2 || tg.KeySyntax != apispec.SFString || tg.Operations[0].IDPointer != "/id" {
		t.Fatalf("%v: http2 %v, %s %q; want http2, sf-string, /id\n%s", err, tg != nil && tg.HTTP2, tg.KeySyntax, tg.Operations[0].IDPointer, out)
	}
	o.HTTP2 = false
	if _, err := Probe(context.Background(), o); err == nil {
		t.Error("an HTTP/1.1 probe of an h2c-only server succeeded: the HTTP/2 probe proves nothing")
	}
}

// TestProbeLegalChoices: the probe reads other legal choices of
// examples/variants: an optional key, 409 for a changed body, integer ids.
func TestProbeLegalChoices(t *testing.T) {
	setTokens(t)
	for _, tc := range []struct {
		name     string
		c        variants.Choices
		required apispec.Tri
		mismatch int
	}{
		{"optional-key", variants.Choices{OptionalKey: true}, apispec.No, 422},
		{"mismatch-409", variants.Choices{MismatchStatus: 409}, apispec.Yes, 409},
		{"int-ids", variants.Choices{IntIDs: true}, apispec.Yes, 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.TTL = time.Hour
			base := serve(t, variants.New(tc.c))
			out, err := Probe(context.Background(), ProbeOptions{URL: base + "/api/refunds", Body: `{"amount":5,"currency":"EUR"}`,
				Headers: []string{"Authorization: Bearer tok_bob"}})
			if err != nil {
				t.Fatal(err)
			}
			tg, profile, err := apispec.ParseConfig(out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if tg.KeySyntax != apispec.SFString || tg.Operations[0].IDPointer != "/id" ||
				profile.KeyRequired != tc.required || profile.MismatchStatus[0] != tc.mismatch {
				t.Errorf("learnt %s %q, key required %s, mismatch %v; want sf-string /id, %s, [%d]\n%s", tg.KeySyntax,
					tg.Operations[0].IDPointer, profile.KeyRequired, profile.MismatchStatus, tc.required, tc.mismatch, out)
			}
		})
	}
}

// TestProbeQuery: --query is sent under a used key and written as a query
// mutation, with what it got; the file loads as it is.
func TestProbeQuery(t *testing.T) {
	setTokens(t)
	base := demotest.Serve(t, demo.Options{})
	out, err := Probe(context.Background(), ProbeOptions{URL: base + "/v1/charges?capture=true", Body: `{"amount":1000,"currency":"usd"}`,
		Headers: []string{"Authorization: Bearer alice"}, Query: []string{"capture=false"}})
	if err != nil {
		t.Fatal(err)
	}
	tg, _, err := apispec.ParseConfig(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	op := tg.Operations[0]
	if op.Path != "/v1/charges?capture=true" || len(op.Mutations) != 2 || op.Mutations[1].Query["capture"] != "false" ||
		!regexp.MustCompile(`other-query, query: \{capture: "false"\}\} # from --query; exchange \d+ \(exchange \d's key and body, another query\) got 422`).Match(out) {
		t.Errorf("path %s, mutations %+v; want the query mutation with its 422\n%s", op.Path, op.Mutations, out)
	}
}

// TestProbeErrors: a bad flag value names the flag; an endpoint that does
// not answer is ErrUnreachable naming the URL; one that refuses every
// request says so with what came back.
func TestProbeErrors(t *testing.T) {
	ref := demotest.Serve(t, demo.Options{})
	for _, tc := range []struct {
		name string
		o    ProbeOptions
		want string
	}{
		{"relative URL", ProbeOptions{URL: "/v1/charges"}, "--probe"},
		{"GET", ProbeOptions{URL: ref + "/v1/charges", Method: "GET"}, "--method"},
		{"body not an object", ProbeOptions{URL: ref + "/v1/charges", Body: "[1]"}, "--body"},
		{"header without colon", ProbeOptions{URL: ref + "/v1/charges", Headers: []string{"Bearer x"}}, "--header"},
		{"key header given", ProbeOptions{URL: ref + "/v1/charges", Headers: []string{"Idempotency-Key: x"}}, "--header"},
		{"query without =", ProbeOptions{URL: ref + "/v1/charges", Query: []string{"capture"}}, `--query "capture": want name=value`},
		{"refused", ProbeOptions{URL: ref + "/v1/charges", Body: `{"amount":1}`}, "no request succeeded"},
	} {
		_, err := Probe(context.Background(), tc.o)
		if err == nil || errors.Is(err, apispec.ErrUnreachable) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line naming %s", tc.name, err, tc.want)
		}
	}
	_, err := Probe(context.Background(), ProbeOptions{URL: "http://127.0.0.1:1/v1/charges", Timeout: 2 * time.Second})
	if !errors.Is(err, apispec.ErrUnreachable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("unreachable: %v", err)
	}
}

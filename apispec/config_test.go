package apispec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfigFull(t *testing.T) {
	tg, p, err := LoadConfig("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "ietf" || p.KeyMaxLen != 255 || p.Cache5xx != No || p.ScopeEndpoint != ScopeIndependent || p.MismatchStatus[0] != 422 ||
		p.BlankKey != BlankReject || p.KeyCase != KeyCaseSensitive {
		t.Errorf("profile overrides not applied on the ietf preset: %+v", p)
	}
	op := tg.Operations[0]
	if string(op.Body) != `{"amount":1000,"currency":"usd","description":"idemcheck"}` {
		t.Errorf("body = %s", op.Body)
	}
	if string(op.Mutations[1].Patch) != `{"metadata":{"order":"idemcheck-2"}}` || op.Variants[VariantSlow].Duration != 1500*time.Millisecond {
		t.Errorf("mutations/variants = %+v", op)
	}
	if tg.KeySyntax != SFString || tg.TTL != 2*time.Second || len(tg.Principals) != 2 || tg.Oracle.Pointer != "/executions" {
		t.Errorf("target = %+v", tg)
	}
}

// TestConfigMutations: a mutation may change the body, the query and
// header fields; a path may carry a query.
func TestConfigMutations(t *testing.T) {
	tg, p, err := ParseConfig([]byte(`base_url: http://127.0.0.1:1
principals: [{name: a}]
operations:
  - name: charges
    method: POST
    path: /v1/charges?capture=true
    body: {amount: 1000}
    mutations:
      - {name: changed-amount, patch: {amount: 1001}}
      - {name: authorise-only, query: {capture: "false"}}
      - {name: other-version, headers: {Api-Version: "2024-06-01"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	ms := tg.Operations[0].Mutations
	if tg.Operations[0].Path != "/v1/charges?capture=true" || len(ms) != 3 || ms[1].Query["capture"] != "false" || ms[1].Patch != nil ||
		ms[2].Headers["Api-Version"] != "2024-06-01" {
		t.Fatalf("mutations = %+v", ms)
	}
	if ms[0].What() != "body" || ms[1].What() != "query" || ms[2].What() != "headers" || !ms[1].ChangesQuery() || ms[2].ChangesQuery() {
		t.Errorf("What = %q %q %q", ms[0].What(), ms[1].What(), ms[2].What())
	}
	if p.QueryMismatch != QueryEither {
		t.Errorf("ietf query_mismatch = %q, want either: the draft leaves another query open", p.QueryMismatch)
	}
	// Without a body mutation the derived one comes first.
	op := tg.Operations[0]
	op.Mutations = ms[1:]
	if got := op.MutationsOrDerived(); len(got) != 3 || !got[0].ChangesBody() || got[1].Name != "authorise-only" {
		t.Errorf("MutationsOrDerived without a body mutation = %+v", got)
	}
}

// TestConfigErrors: every bad input gives one line naming the field.
func TestConfigErrors(t *testing.T) {
	const base = "base_url: http://127.0.0.1:1\nprincipals: [{name: a, headers: {Authorization: Bearer a}}]\n"
	const op = "operations: [{name: c, method: POST, path: /c, body: {amount: 1}}]\n"
	cases := []struct {
		name, yaml, want string
	}{
		{"malformed YAML", "base_url: [unclosed\n", "line"},
		{"empty file", "", "empty config"},
		{"ttl_from beside ttl", base + op + "ttl: 3s\nttl_from: {path: /v1/config, pointer: /lifetime}\n", "ttl_from: the lifetime is read from the API, so ttl must not be declared too"},
		{"ttl_from without a pointer", base + op + "ttl_from: {path: /v1/config}\n", `ttl_from.pointer "": want an RFC 6901 pointer`},
		{"profile failed_key", base + op + "profile: {overrides: {failed_key: forever}}\n", `profile failed_key "forever": want released or locked-until-expiry`},
		// The YAML library names the line where the enclosing block began
		// (line 3 for these); the mistake is on line 5.
		{"mis-indented key", base + "operations:\n  - name: c\n  path: /c\n", "line 5: did not find expected '-' indicator"},
		{"unclosed flow sequence", base + "operations:\n  - name: c\n    body: {a: [1, 2}\n", "line 5: did not find expected ',' or ']'"},
		{"unknown top-level field", base + op + "colour: red\n", `line 4: unknown field "colour"`},
		{"unknown operation field", base + "operations: [{name: c, method: POST, path: /c, verb: x}]\n", `unknown field "verb"`},
		{"response not a success", base + "operations: [{name: c, method: POST, path: /c, response: {status: 302}}]\n", `operations[0].response.status 302: want a 2xx success status`},
		{"response body not an object", base + "operations: [{name: c, method: POST, path: /c, response: {body: [1]}}]\n", `operations[0].response.body: want a JSON object`},
		{"response empty", base + "operations: [{name: c, method: POST, path: /c, response: {}}]\n", `operations[0].response: give body`},
		{"unknown response field", base + "operations: [{name: c, method: POST, path: /c, response: {code: 201}}]\n", `unknown field "code"`},
		{"gRPC response status", "base_url: grpc://127.0.0.1:1\nkey: {field: request_id}\nprincipals: [{name: a, metadata: {authorization: Bearer a}}]\n" +
			"operations: [{name: c, rpc: a.B/C, response: {status: 200, body: {name: x}}}]\n", `operations[0].response.status 200: a gRPC answer has no HTTP status`},
		{"unknown profile", base + op + "profile: {preset: paypal}\n", `unknown profile "paypal" (valid: acp, adcp, aep-155, aip-155, grpc-metadata, ietf, lenient, reference, seeds, shopify, stripe)`},
		{"unknown override", base + op + "profile: {overrides: {mismatch: [409]}}\n", `line 4: profile.overrides: unknown field "mismatch"`},
		{"bad override value", base + op + "profile: {overrides: {cache_5xx: maybe}}\n", `"maybe" is not true, false or "?"`},
		{"bad replay_compare", base + op + "profile: {overrides: {replay_compare: fuzzy}}\n", "profile replay_compare \"fuzzy\""},
		{"bad pointer", base + "operations: [{name: c, method: POST, path: /c, id_pointer: id}]\n", `operations[0].id_pointer "id": a JSON pointer must be empty or start with '/'`},
		{"bad pointer escape", base + op + "oracle: {url: /e, pointer: /a~2}\n", `oracle.pointer "/a~2"`},
		{"oracle url", base + op + "oracle: {url: \"effects?key={key}\", pointer: /n}\n", `oracle.url "effects?key={key}"`},
		{"per_replica on one absolute counter", base + op + "oracle: {url: \"http://127.0.0.1:2/e?key={key}\", pointer: /n, per_replica: true}\n", `oracle.per_replica: needs a url that is a path`},
		{"oracle principal out of range", base + op + "oracle: {url: /e, pointer: /n, principal: 3}\n", "oracle.principal 3"},
		{"per_principal beside principal", base + op + "oracle: {url: /e, pointer: /n, principal: 1, per_principal: true}\n", "oracle.principal 1: per_principal reads with every principal's headers"},
		{"per_principal on sql", base + op + "oracle: {sql: {dsn: \"postgres://h/db\", query: \"select 1\"}, per_principal: true}\n", "a database sees every principal's rows"},
		{"bad method", base + "operations: [{name: c, method: FETCH, path: /c}]\n", `operations[0].method "FETCH"`},
		{"relative base_url", "base_url: /api\nprincipals: [{name: a}]\n" + op, `base_url "/api"`},
		{"no principals", "base_url: http://127.0.0.1:1\n" + op, "principals: at least one"},
		{"duplicate principal", "base_url: http://127.0.0.1:1\nprincipals: [{name: a}, {name: a}]\n" + op, `principals[1].name "a"`},
		{"patch not an object", base + "operations: [{name: c, method: POST, path: /c, body: {a: 1}, mutations: [{name: m, patch: [1]}]}]\n", "operations[0].mutations[0].patch: want a JSON object"},
		{"body not an object", base + "operations: [{name: c, method: POST, path: /c, body: [1, 2]}]\n", "operations[0].body: want a JSON object"},
		{"unknown variant", base + "operations: [{name: c, method: POST, path: /c, body: {a: 1}, variants: {crashy: {patch: {a: 2}}}}]\n", "operations[0].variants.crashy: unknown variant"},
		{"a body variant without a body", base + "operations: [{name: c, method: POST, path: /c, body: {a: 1}, variants: {invalid: {status: 400}}}]\n", "operations[0].variants.invalid: want patch (RFC 7386 merge patch) or raw"},
		{"slow without duration", base + "operations: [{name: c, method: POST, path: /c, body: {a: 1}, variants: {slow: {patch: {d: 1}}}}]\n", "operations[0].variants.slow.duration"},
		{"bad duration", base + op + "lease: soon\n", "line 4: lease: cannot unmarshal"},
		{"ttl neither a duration nor never", base + op + "ttl: soon\n", `line 4: ttl: "soon" is not a duration (e.g. 2s, 24h) or never`},
		{"variant with patch and raw", base + "operations: [{name: c, method: POST, path: /c, body: {a: 1}, variants: {invalid: {patch: {a: x}, raw: '{'}}}]\n", "operations[0].variants.invalid: give either patch or raw, not both"},
		{"key_format not a regexp", base + op + "profile: {overrides: {key_format: '[a-'}}\n", `profile key_format "[a-": want uuid or a regular expression`},
		{"blank_key unknown", base + op + "profile: {overrides: {blank_key: maybe}}\n", `profile blank_key "maybe": want reject, accept or "?"`},
		{"key_case unknown", base + op + "profile: {overrides: {key_case: upper}}\n", `profile key_case "upper": want sensitive, folded or "?"`},
		{"key_format no generated key obeys", base + op + "profile: {overrides: {key_format: '[a-z]{3}'}}\n", `profile key_format "[a-z]{3}": no key idemcheck can generate matches it`},
		{"bad nested type", base + "operations: [{name: c, method: POST, path: /c, variants: {slow: {patch: {a: 1}, duration: 1s, status: fast}}}]\n", "operations[0].variants.slow.status: cannot unmarshal"},
		{"negative duration", base + op + "lease: -1s\n", "must not be negative"},
		{"key header in op headers", base + "operations: [{name: c, method: POST, path: /c, headers: {idempotency-key: x}}]\n", "the key header is set by the suite"},
		{"no operations", base, "operations: at least one"},
		{"mutation changes nothing", base + "operations: [{name: c, method: POST, path: /c, body: {a: 1}, mutations: [{name: m}]}]\n", "operations[0].mutations[0]: want patch (the body), query or headers"},
		{"mutation query empty name", base + "operations: [{name: c, method: POST, path: /c, mutations: [{name: m, query: {'': x}}]}]\n", "operations[0].mutations[0].query: want parameter names"},
		// One flow-style line holds many keys: the error names the one whose
		// value is of the wrong kind, not the line's first key.
		{"flow mutation query a sequence", base + "operations: [{name: c, method: POST, path: /c, body: {a: 1}, mutations: [{name: m, query: [1, 2]}]}]\n", "line 3: operations[0].mutations[0].query: cannot unmarshal !!seq"},
		{"flow query value a sequence", base + "operations: [{name: c, method: POST, path: /c, mutations: [{name: m, query: {a: [1]}}]}]\n", "line 3: operations[0].mutations[0].query.a: cannot unmarshal !!seq"},
		{"mutation query not a mapping", base + "operations:\n  - name: c\n    method: POST\n    path: /c\n    mutations:\n      - name: m\n        query: capture=false\n", "line 9: operations[0].mutations[0].query: cannot unmarshal"},
		{"mutation header not a name", base + "operations: [{name: c, method: POST, path: /c, mutations: [{name: m, headers: {'Api Version': x}}]}]\n", "operations[0].mutations[0].headers.Api Version: want an HTTP field name"},
		{"mutation sets the key header", base + "operations: [{name: c, method: POST, path: /c, mutations: [{name: m, headers: {idempotency-key: x}}]}]\n", "operations[0].mutations[0].headers.idempotency-key: the key header is set by the suite"},
		{"path with a bad query", base + "operations: [{name: c, method: POST, path: '/c?a=%zz'}]\n", `operations[0].path "/c?a=%zz"`},
		{"bad query_mismatch", base + op + "profile: {overrides: {query_mismatch: sometimes}}\n", `profile query_mismatch "sometimes": want reject, fresh or either`},
		{"events without a broker", base + op + "events: {key: {header: idempotency-key}}\n", "events: set one of kafka, nats or redis"},
		{"events without a topic", base + op + "events: {kafka: {brokers: [127.0.0.1:9092]}, key: {header: k}}\n", "events.kafka.topic: required"},
		{"events key pointer", base + op + "events: {redis: {url: redis://h:1/0, stream: s}, key: {pointer: data}}\n", `events.key.pointer "data": must start with '/'`},
		{"events settle", base + op + "events: {redis: {url: redis://h:1/0, stream: s}, key: {header: k}, settle: soon}\n", "line 4: events.settle: cannot unmarshal"},
		{"events unknown field", base + op + "events: {kafka: {brokers: [h:1], topic: t, group: g}, key: {header: k}}\n", `unknown field "group"`},
		{"events url unset", base + op + "events: {redis: {url: '${IDEMCHECK_TEST_UNSET}', stream: s}, key: {header: k}}\n", "events.redis.url: ${IDEMCHECK_TEST_UNSET} is not set"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := LoadConfig(path)
			if err == nil {
				t.Fatalf("no error for %s", c.name)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "config "+path+": ") {
				t.Errorf("error %q: want one line starting with the file and containing %q", msg, c.want)
			}
		})
	}
}

// TestConfigDescribesAPI: what a config can say about an API that the
// presets cannot: keys that never expire, a raw (non-JSON) variant body, a
// key format the generator obeys, and overrides kept under --profile.
func TestConfigDescribesAPI(t *testing.T) {
	const base = "base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\n"
	const op = "operations: [{name: c, method: POST, path: /c, body: {a: 1}}]\n"
	for _, c := range []struct {
		name, yaml, preset string
		check              func(*Target, *Profile) string
	}{
		{"ttl never: keys never expire, the expiry cases run to record it", base + op + "ttl: never\n", "", func(tg *Target, _ *Profile) string {
			if !tg.NeverExpires || tg.TTL != 0 {
				return fmt.Sprintf("want NeverExpires, TTL 0; got %v %s", tg.NeverExpires, tg.TTL)
			}
			return ""
		}},
		{"ttl duration", base + op + "ttl: 90s\n", "", func(tg *Target, _ *Profile) string {
			if tg.NeverExpires || tg.TTL != 90*time.Second {
				return fmt.Sprintf("want TTL 90s; got %s never=%v", tg.TTL, tg.NeverExpires)
			}
			return ""
		}},
		{"raw variant body is sent as is", base + "operations: [{name: c, method: POST, path: /c, body: {a: 1}, variants: {invalid: {raw: '{\"a\": ', status: 400}, business_error: {patch: {a: 2}}}}]\n", "", func(tg *Target, _ *Profile) string {
			op := tg.Operations[0]
			if b, _, _ := op.VariantBody(VariantInvalid); string(b) != `{"a": ` {
				return fmt.Sprintf("raw body = %q", b)
			}
			if b, _, _ := op.VariantBody(VariantBusinessError); string(b) != `{"a":2}` {
				return fmt.Sprintf("patched body = %q", b)
			}
			return ""
		}},
		{"key_format uuid: the generator gives bare UUIDs", base + op + "profile: {overrides: {key_format: uuid}}\n", "", func(_ *Target, p *Profile) string {
			k := p.NewKey()
			if len(k) != 36 || !p.KeyValid(k) || p.KeyValid("abc") || p.KeyValid(k+"x") {
				return fmt.Sprintf("NewKey %q, KeyValid(abc)=%v", k, p.KeyValid("abc"))
			}
			return ""
		}},
		{"key_format regexp: the generator finds a form that obeys it", base + op + "profile: {overrides: {key_format: '[0-9A-F]{32}'}}\n", "", func(_ *Target, p *Profile) string {
			if k := p.NewKey(); len(k) != 32 || strings.ToUpper(k) != k || p.NewKey() == k {
				return fmt.Sprintf("NewKey %q: want 32 fresh upper-case hex digits", k)
			}
			return ""
		}},
		{"--profile replaces the preset and keeps the overrides", base + op + "profile: {preset: ietf, overrides: {key_max_len: 64, key_format: uuid}}\n", "stripe", func(_ *Target, p *Profile) string {
			if p.Name != "stripe" || p.KeyMaxLen != 64 || p.KeyFormat != KeyFormatUUID || p.MismatchStatus[0] != 400 {
				return fmt.Sprintf("want stripe with key_max_len 64 and key_format uuid; got %s %d %q %v", p.Name, p.KeyMaxLen, p.KeyFormat, p.MismatchStatus)
			}
			return ""
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			tg, p, err := LoadConfigPreset(path, c.preset)
			if err != nil {
				t.Fatal(err)
			}
			if msg := c.check(tg, p); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func TestProfileByName(t *testing.T) {
	for _, n := range ProfileNames() {
		p, err := ProfileByName(n)
		if err != nil || p.Validate() != nil {
			t.Errorf("preset %s: %v %v", n, err, p.Validate())
		}
	}
	a, _ := ProfileByName("ietf")
	a.MismatchStatus[0] = 499
	if b, _ := ProfileByName("ietf"); b.MismatchStatus[0] != 422 {
		t.Error("ProfileByName returns shared slices: a caller's change leaked into the preset")
	}
}

// The events: section is read as evidence/events validates it: defaults
// filled in, NATS accepted here (its reader refuses it when opened), and a
// password written into a broker URL is redacted from every report.
func TestConfigEvents(t *testing.T) {
	const head = "base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\noperations: [{name: c, method: POST, path: /c, body: {a: 1}}]\n"
	tg, _, err := ParseConfig([]byte(head + "events:\n  kafka: {brokers: [\"127.0.0.1:9092\"], topic: orders.events}\n  key: {pointer: /data/reference}\n  event_id: /id\n  settle: 3s\n"))
	if err != nil {
		t.Fatal(err)
	}
	ev := tg.Events
	if ev == nil || ev.Kafka == nil || ev.Kafka.Topic != "orders.events" || ev.Key.Pointer != "/data/reference" || ev.EventID != "/id" || ev.Settle != 3*time.Second {
		t.Fatalf("events = %+v", ev)
	}
	if tg, _, err = ParseConfig([]byte(head + "events: {nats: {url: nats://127.0.0.1:4222, stream: ORDERS}, key: {header: idempotency-key}}\n")); err != nil || tg.Events.NATS == nil {
		t.Fatalf("nats: %v (a config may name it; opening it says it is not supported)", err)
	}
	tg, _, err = ParseConfig([]byte(head + "events: {redis: {url: \"redis://:hunter2@127.0.0.1:6379/0\", stream: s}, key: {header: k}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tg.Events.Settle != 2*time.Second || tg.Events.Redis.PayloadField != "payload" {
		t.Fatalf("defaults not filled in: %+v", tg.Events)
	}
	if got := tg.Redact("dial redis://:hunter2@127.0.0.1:6379/0: refused"); strings.Contains(got, "hunter2") {
		t.Fatalf("the broker URL's password is not redacted: %s", got)
	}
}

// A variant may be a duration alone (an API slow as it is, with no knob)
// or patch: {}: the body is sent as declared.
func TestVariantWithoutPatch(t *testing.T) {
	for _, v := range []string{"slow: {duration: 30ms}", "slow: {patch: {}, duration: 30ms}", "transient_error: {status: 503}"} {
		tg, _, err := ParseConfig([]byte("base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\noperations: [{name: c, method: POST, path: /c, body: {a: 1}, variants: {" + v + "}}]\n"))
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		op := &tg.Operations[0]
		for name := range op.Variants {
			if b, _, _ := op.VariantBody(name); string(b) != `{"a":1}` {
				t.Errorf("%s: body %s, want the declared {\"a\":1}", v, b)
			}
		}
	}
}

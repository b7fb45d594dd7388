package apispec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const grpcBase = "base_url: grpc://127.0.0.1:50051\n" +
	"principals: [{name: alice, metadata: {authorization: Bearer alice}}, {name: bob, metadata: {authorization: Bearer bob}}]\n"

const grpcOp = "operations: [{name: payments, rpc: idemcheck.reference.v1.PaymentService/CreatePayment, " +
	"body: {parent: accounts/a1, payment: {amount: 1000, currency: USD}}, mutations: [{name: changed-amount, patch: {payment: {amount: 1001}}}], " +
	"variants: {business_error: {patch: {knobs: {fail: decline}}, status: FAILED_PRECONDITION}}}]\n"

func TestGRPCConfig(t *testing.T) {
	tg, p, err := ParseConfig([]byte(grpcBase + grpcOp + "key: {field: request_id}\n" +
		"profile: {preset: aip-155, overrides: {mismatch_status: INVALID_ARGUMENT, in_flight_status: [ABORTED, 503], missing_status: invalid_argument}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	op := tg.Operations[0]
	if !tg.IsGRPC() || tg.KeyField() != "request_id" || tg.KeySyntax != Raw || op.Method != "POST" || op.Path != "/idemcheck.reference.v1.PaymentService/CreatePayment" {
		t.Errorf("target %+v, operation %+v", tg, op)
	}
	if tg.Principals[1].Headers["authorization"] != "Bearer bob" || op.Variants[VariantBusinessError].Status != GRPCStatus(9) {
		t.Errorf("principal %+v, variant %+v", tg.Principals[1], op.Variants)
	}
	if h := tg.Header(&op, 0, true); h.Get("Content-Type") != "" || h.Get("Authorization") != "Bearer alice" {
		t.Errorf("header %v: want the metadata, no Content-Type (gRPC sets its own)", h)
	}
	// Code names are held as the exact codes (judged exactly), numbers as
	// HTTP statuses; both print as the config wrote them.
	if p.Name != "aip-155" || p.KeyMaxLen != 36 || p.KeyRequired != No || len(p.MismatchStatus) != 1 || p.MismatchStatus[0] != GRPCStatus(3) ||
		p.InFlightStatus[0] != GRPCStatus(10) || p.InFlightStatus[1] != 503 || p.MissingStatus[0] != GRPCStatus(3) {
		t.Errorf("profile %+v", p)
	}
	if s, j := p.InFlightStatus.String(), mustJSON(t, p.InFlightStatus); s != "[ABORTED 503]" || j != `["ABORTED",503]` {
		t.Errorf("in_flight_status prints %s, JSON %s", s, j)
	}
	// An HTTP target's answers have no code: its config's code names and
	// a gRPC preset hold the HTTP statuses google.rpc.Code maps them to,
	// as before.
	_, hp, err := ParseConfig([]byte("base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\noperations: [{name: c, method: POST, path: /c, " +
		"variants: {business_error: {patch: {fail: decline}, status: FAILED_PRECONDITION}}}]\n" +
		"profile: {preset: aip-155, overrides: {mismatch_status: [INVALID_ARGUMENT, 422, FAILED_PRECONDITION]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(hp.MismatchStatus, hp.InFlightStatus); s != "[400 422] [409]" || mustJSON(t, hp.MismatchStatus) != "[400,422]" {
		t.Errorf("HTTP target: mismatch, in flight %s", s)
	}
	if mustJSON(t, Statuses(nil)) != "null" {
		t.Error("a nil list marshals as null, as a nil []int")
	}
	tg, _, err = ParseConfig([]byte(grpcBase + grpcOp + "key: {metadata: x-idempotency-key}\nprofile: {preset: grpc-metadata}\n"))
	if err != nil || tg.KeyHeader != "x-idempotency-key" || tg.KeyField() != "" {
		t.Fatalf("metadata key: %v, %+v", err, tg)
	}
	if GRPCCodeName(10) != "ABORTED" || GRPCHTTPStatus(10) != 409 || GRPCCodeName(99) != "99" {
		t.Error("code table")
	}
}

// TestGRPCConfigErrors: every bad gRPC input gives one line naming the field.
func TestGRPCConfigErrors(t *testing.T) {
	const key = "key: {field: request_id}\n"
	cases := []struct{ name, yaml, want string }{
		{"no key", grpcBase + grpcOp, "key: a gRPC target says where its key goes"},
		{"unset secret in metadata", "base_url: grpc://127.0.0.1:1\nprincipals: [{name: a, metadata: {authorization: \"Bearer ${IDEMCHECK_TEST_UNSET_9}\"}}]\n" + grpcOp + key,
			"principals[0].metadata.authorization: ${IDEMCHECK_TEST_UNSET_9} is not set"},

		{"both places", grpcBase + grpcOp + "key: {field: request_id, metadata: x-k}\n", "key: give field"},
		{"first_sent without field", grpcBase + grpcOp + "key: {metadata: x-k, first_sent: true}\n", "key.first_sent: needs key.field"},
		{"bad field", grpcBase + grpcOp + "key: {field: request-id}\n", `key.field "request-id"`},
		{"reserved metadata", grpcBase + grpcOp + "key: {metadata: grpc-key}\n", `key.metadata "grpc-key"`},
		{"upper-case metadata", grpcBase + grpcOp + "key: {metadata: X-Key}\n", `key.metadata "X-Key"`},
		{"key_header", grpcBase + grpcOp + key + "key_header: X-Key\n", `key_header "X-Key": a gRPC target's key is key: {metadata: x-key}`},
		{"sf-string", grpcBase + grpcOp + key + "key_syntax: sf-string\n", "key_syntax \"sf-string\": a gRPC target sends its key raw"},
		{"no port", "base_url: grpc://127.0.0.1\nprincipals: [{name: a}]\n" + grpcOp + key, `base_url "grpc://127.0.0.1": want grpc://host:port`},
		{"no rpc", grpcBase + "operations: [{name: c, body: {a: 1}}]\n" + key, "operations[0].rpc: a gRPC operation names its method"},
		{"bad rpc", grpcBase + "operations: [{name: c, rpc: CreatePayment}]\n" + key, `operations[0].rpc "CreatePayment": want package.Service/Method`},
		{"rpc and path", grpcBase + "operations: [{name: c, rpc: p.S/M, path: /x}]\n" + key, "operations[0].rpc: a gRPC operation has no method or path"},
		{"key in body", grpcBase + "operations: [{name: c, rpc: p.S/M, body: {request_id: x}}]\n" + key, "operations[0].body.request_id: the key field is set by the suite"},
		{"rpc over http", "base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\noperations: [{name: c, rpc: p.S/M, body: {a: 1}}]\n", `operations[0].rpc "p.S/M": needs a grpc:// or grpcs:// base_url`},
		{"key over http", "base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\noperations: [{name: c, method: POST, path: /c}]\n" + key, "key: a gRPC target's key place"},
		{"metadata over http", "base_url: http://127.0.0.1:1\nprincipals: [{name: a, metadata: {a: b}}]\noperations: [{name: c, method: POST, path: /c}]\n", "principals[0].metadata: a gRPC target's word"},
		{"relative oracle", grpcBase + grpcOp + key + "oracle: {url: /v1/effects, pointer: /executions}\n", "a gRPC target's oracle url is an absolute http(s) URL"},
		{"unknown code", grpcBase + grpcOp + key + "profile: {overrides: {mismatch_status: NOPE}}\n", "cannot unmarshal `NOPE`: want a status (409) or a gRPC code name"},
		{"OK as an error", grpcBase + grpcOp + key + "profile: {overrides: {mismatch_status: OK}}\n", "profile mismatch_status: OK is not an error status"},
		{"replay_binary over http", "base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\noperations: [{name: c, method: POST, path: /c}]\nprofile: {overrides: {replay_binary: true}}\n",
			"profile replay_binary: compares a gRPC answer's binary encoding"},
		{"replay_binary without bodies", grpcBase + grpcOp + key + "profile: {overrides: {replay_binary: true, replay_compare: status}}\n", "profile replay_binary: compares a replay's message, and replay_compare status compares none"},
		{"replay_metadata", grpcBase + grpcOp + key + "profile: {overrides: {replay_metadata: [\"x b\"]}}\n", `profile replay_metadata "x b"`},
		{"code number", grpcBase + grpcOp + key + "profile: {overrides: {mismatch_status: 1003}}\n", "1003 is not an HTTP status"},
		// A gRPC target's replicas share its base URL's scheme: an http(s)
		// replica would be sent RPCs, a grpcs:// one beside grpc:// TLS
		// the others do not speak.
		{"http replica", grpcBase + grpcOp + key + "replicas: [grpc://127.0.0.1:1, http://127.0.0.1:2]\n", `replicas[1] "http://127.0.0.1:2": want grpc://host:port like base_url`},
		{"grpcs replica", grpcBase + grpcOp + key + "replicas: [grpc://127.0.0.1:1, grpcs://127.0.0.1:2]\n", `replicas[1] "grpcs://127.0.0.1:2": want grpc://host:port`},
		{"replica path", grpcBase + grpcOp + key + "replicas: [grpc://127.0.0.1:1, grpc://127.0.0.1:2/x]\n", `replicas[1] "grpc://127.0.0.1:2/x"`},
		{"grpc replica of http", "base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\noperations: [{name: c, method: POST, path: /c}]\nreplicas: [http://127.0.0.1:1, grpc://127.0.0.1:2]\n",
			`replicas[1] "grpc://127.0.0.1:2": want an absolute http(s) URL`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseConfig([]byte(c.yaml))
			if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v: want one line containing %q", err, c.want)
			}
		})
	}
}

// TestGRPCReplicas: a gRPC target names its replicas as an HTTP one
// does, in the config (base_url defaults to the first) and by --replica
// (AddReplicas), the scheme the base URL's.
func TestGRPCReplicas(t *testing.T) {
	const key = "key: {field: request_id}\n"
	cfg := "principals: [{name: a}]\n" + grpcOp + key + "replicas: [grpcs://127.0.0.1:1/, grpcs://127.0.0.1:2]\n"
	tg, _, err := ParseConfig([]byte(cfg))
	if err != nil || tg.BaseURL != "grpcs://127.0.0.1:1" || !slices.Equal(tg.Replicas, []string{"grpcs://127.0.0.1:1", "grpcs://127.0.0.1:2"}) {
		t.Fatalf("replicas: %v: base %q, replicas %v", err, tg.BaseURL, tg.Replicas)
	}
	tg, _, err = ParseConfig([]byte(grpcBase + grpcOp + key))
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.AddReplicas([]string{"grpc://127.0.0.1:2/"}, false); err != nil || !slices.Equal(tg.Replicas, []string{"grpc://127.0.0.1:50051", "grpc://127.0.0.1:2"}) {
		t.Fatalf("--replica grpc://: %v, replicas %v", err, tg.Replicas)
	}
	err = tg.AddReplicas([]string{"https://127.0.0.1:2"}, false)
	if want := `--replica: replicas[1] "https://127.0.0.1:2": want grpc://host:port like base_url`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("--replica https:// beside grpc://: %v, want %q", err, want)
	}
}

// TestFirstSentKept: a key sent again gets the first_sent it was first
// sent with while it is among the most recently used; the memory holds at
// most size keys, the least recently used falling out (a soak's fresh
// keys), while a key used on every round (a load pool's) stays.
func TestFirstSentKept(t *testing.T) {
	const size = 64
	tg := &Target{firstSent: newKeyTimes(size)}
	pool := tg.FirstSent("pool")
	first := tg.FirstSent("k0")
	time.Sleep(2 * time.Millisecond) // first_sent is kept to the millisecond
	if again := tg.FirstSent("k0"); !again.Equal(first) {
		t.Fatalf("rule: a retry carries its first first_sent; got %s then %s", first, again)
	}
	for i := 1; i <= 4*size; i++ {
		tg.FirstSent(fmt.Sprintf("k%d", i))
		if got := tg.FirstSent("pool"); !got.Equal(pool) {
			t.Fatalf("rule: a key used on every round keeps its first_sent; got %s, want %s", got, pool)
		}
	}
	if n := tg.firstSent.lru.Len(); n > size {
		t.Errorf("rule: the memory holds at most %d keys; it holds %d", size, n)
	}
	if tg.firstSent.lru.Contains("k0") {
		t.Error("rule: the least recently used keys fall out; k0 is still held")
	}
}

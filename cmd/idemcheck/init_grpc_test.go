package main

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/idemcheck/idemcheck/examples/grpcshop/shopv1"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference/grpcref"
	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
)

// referenceBody is a request the reference gRPC service accepts, for
// both of its methods: what the body's TODO asks for.
const referenceBody = `{"parent": "accounts/a1", "payment": {"amount": 1000, "currency": "USD"}}`

// initGRPC runs init --grpc with args and returns the written file's
// path and text; it fails the test unless init exits 0.
func initGRPC(t *testing.T, args ...string) (path, text string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "idemcheck.yaml")
	code, stderr := runCaptured(t, append([]string{"init", "--grpc"}, append(args, "-o", path)...)...)
	if code != exitOK || !strings.Contains(stderr, "init: wrote "+path) {
		t.Fatalf("init --grpc %v: exit %d: %s", args, code, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, string(b)
}

// fillTODOs writes a copy of the config at path with what its TODOs ask:
// the first operation's body, and (when given) the evidence source the
// commented oracle: names and the profile's commented overrides. Nothing
// else changes.
func fillTODOs(t *testing.T, path, body, oracleURL string, overrides map[string]any) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	var b map[string]any
	if err := yaml.Unmarshal([]byte(body), &b); err != nil {
		t.Fatal(err)
	}
	cfg["operations"].([]any)[0].(map[string]any)["body"] = b
	if oracleURL != "" {
		cfg["oracle"] = map[string]any{"url": oracleURL, "pointer": "/executions"}
	}
	if overrides != nil {
		cfg["profile"].(map[string]any)["overrides"] = overrides
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, "filled.yaml", string(out))
}

func wantLines(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the written config lacks %q:\n%s", w, text)
		}
	}
}

// TestInitGRPC: init --grpc against the reference gRPC service (serve
// --grpc, reflection on) writes, per key kind, a config that list loads
// as written and with which run, its body and oracle TODOs filled,
// passes the correct service and fails a defective one.
func TestInitGRPC(t *testing.T) {
	httpBase, grpcBase := serveGRPCForTest(t)
	t.Setenv("IDEMCHECK_TOKEN_1", "alice")
	t.Setenv("IDEMCHECK_TOKEN_2", "bob")
	oracle := httpBase + "/v1/effects?key={key}"
	const svc = "idemcheck.reference.v1.PaymentService/"
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		// Both methods carry a key, one each kind: the first is written,
		// the other named in a TODO.
		{"aip-155", nil, []string{
			"key: {field: request_id} # AIP-155's string request_id in the request of CreatePayment",
			"# ttl: 24h  # TODO:", "rpc: " + svc + "CreatePayment", "- name: create-payment",
			"# TODO: " + svc + "CreateRefund carries its key as AEP-155's IdempotencyKey {key, first_sent} in the field idempotency_key",
			"id_pointer: /name # guessed:", "{name: changed-amount, patch: {payment: {amount: 2}}} # guessed:",
			"createTime: \"2025-01-01T00:00:00Z\"", "knobs: {delayMs: 1, fail: TODO, padBytes: 1}", "# variants:  # TODO:",
			`metadata: {authorization: "Bearer ${IDEMCHECK_TOKEN_1}"} # TODO: export IDEMCHECK_TOKEN_1`,
			`metadata: {authorization: "Bearer ${IDEMCHECK_TOKEN_2}"} # TODO: export IDEMCHECK_TOKEN_2`,
			"preset: aip-155", "#   mismatch_status: INVALID_ARGUMENT", "#   stale_replay_on_mismatch: false", "#   in_flight_status: ABORTED", "#   missing_status: INVALID_ARGUMENT",
		}},
		{"aep-155", []string{"--rpc", svc + "CreateRefund"}, []string{
			"key: {field: idempotency_key, first_sent: true}", `ttl: 1h # guessed: AEP-155: keys are honoured "for at least an hour"`,
			"rpc: " + svc + "CreateRefund", "preset: aep-155",
		}},
		{"metadata", []string{"--key-metadata", "x-idempotency-key", "--rpc", svc + "CreatePayment"}, []string{
			"key: {metadata: x-idempotency-key} # from --key-metadata", "preset: grpc-metadata", "requestId: TODO",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, text := initGRPC(t, append([]string{grpcBase, "--metadata", "authorization: Bearer alice"}, tc.args...)...)
			wantLines(t, text, tc.want...)
			if tc.name != "metadata" && strings.Contains(text, "requestId") || strings.Contains(text, "idempotencyKey") {
				t.Errorf("the key field is in the body (idemcheck sets it):\n%s", text)
			}
			if code, stderr := runCaptured(t, "list", "--config", cfg); code != exitOK {
				t.Fatalf("list on the config as written: exit %d: %s", code, stderr)
			}
			filled := fillTODOs(t, cfg, referenceBody, oracle, nil)
			if code, stderr := runCaptured(t, "run", "--config", filled); code != exitOK {
				t.Fatalf("run on the filled config: exit %d, want 0 (the correct reference): %s", code, stderr)
			}
		})
	}
	// The same config, with the code the reference documents for a used
	// key with another request (AIP-155 names none: the overrides TODO),
	// fails the reference that ignores the request under a used key: the
	// mutation init wrote is material.
	cfg, _ := initGRPC(t, grpcBase, "--metadata", "authorization: Bearer alice")
	httpBase, grpcBase = serveGRPCForTest(t, "no-fingerprint")
	filled := fillTODOs(t, cfg, referenceBody, httpBase+"/v1/effects?key={key}", map[string]any{"mismatch_status": "INVALID_ARGUMENT", "stale_replay_on_mismatch": false})
	code, stderr := runCaptured(t, "run", "--config", filled, "--base-url", grpcBase)
	if code != exitFail || !strings.Contains(stderr, "mismatch/changed-body") {
		t.Fatalf("no-fingerprint: exit %d, want 1 naming mismatch/changed-body: %s", code, stderr)
	}
}

// serveServices serves register's services on a loopback listener until the
// test ends and returns its grpc:// URL (grpcs:// with TLS options).
func serveServices(t *testing.T, register func(*grpc.Server), opts ...grpc.ServerOption) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	register(srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	if len(opts) > 0 {
		return "grpcs://" + ln.Addr().String()
	}
	return "grpc://" + ln.Addr().String()
}

// writeProtoset writes a descriptor set of files, as protoc
// --include_imports --descriptor_set_out does.
func writeProtoset(t *testing.T, files ...protoreflect.FileDescriptor) string {
	t.Helper()
	set := &descriptorpb.FileDescriptorSet{}
	for _, f := range files {
		set.File = append(set.File, protodesc.ToFileDescriptorProto(f))
	}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "api.protoset")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInitGRPCProtoset: a server without reflection is refused in one
// line naming --protoset; with --protoset the config is written from the
// file and run reaches a verdict against that server. A protoset needs no
// server at all: grpcshop's descriptors, nothing listening.
func TestInitGRPCProtoset(t *testing.T) {
	svc, err := grpcref.New(grpcref.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	base := serveServices(t, func(s *grpc.Server) { paymentsv1.RegisterPaymentServiceServer(s, svc) }) // no reflection
	code, stderr := runCaptured(t, "init", "--grpc", base, "-o", "-")
	if code != exitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
		!strings.Contains(stderr, "offers no reflection (grpc.reflection.v1 or v1alpha): give --protoset FILE") {
		t.Fatalf("a server without reflection: exit %d, want 2 and one line naming --protoset: %q", code, stderr)
	}

	t.Setenv("IDEMCHECK_TOKEN_1", "alice")
	t.Setenv("IDEMCHECK_TOKEN_2", "bob")
	ps := writeProtoset(t, timestamppb.File_google_protobuf_timestamp_proto, paymentsv1.File_payments_proto)
	cfg, text := initGRPC(t, base, "--protoset", ps, "--metadata", "authorization: Bearer alice")
	wantLines(t, text, "protoset: "+ps+" # from --protoset", "key: {field: request_id}", "from protoset "+ps)
	if code, stderr := runCaptured(t, "list", "--config", cfg); code != exitOK {
		t.Fatalf("list: exit %d: %s", code, stderr)
	}
	// No evidence source here (the service alone): some MUSTs may lack
	// evidence (exit 5); the correct service is never failed.
	code, stderr = runCaptured(t, "run", "--config", fillTODOs(t, cfg, referenceBody, "", nil))
	if code != exitOK && code != exitIncomplete {
		t.Fatalf("run through the protoset: exit %d, want 0 or 5: %s", code, stderr)
	}

	// grpcshop's checkout (examples/grpcshop): camelCase names in the
	// body and the mutation, AEP-155 by shape in CreateRefund.
	shop := writeProtoset(t, timestamppb.File_google_protobuf_timestamp_proto, shopv1.File_checkout_proto)
	nowhere := "grpc://" + testenv.FreeAddr(t)
	cfg, text = initGRPC(t, nowhere, "--protoset", shop, "--metadata", "x-api-key: sk_test_alice")
	wantLines(t, text, "rpc: shop.v1.CheckoutService/CreateOrder", "order: {sku: TODO, quantity: 1, card: TODO, paymentReference: TODO}",
		"{name: changed-quantity, patch: {order: {quantity: 2}}}", "# TODO: shop.v1.CheckoutService/CreateRefund carries its key as AEP-155's",
		`metadata: {x-api-key: "${IDEMCHECK_TOKEN_1}"}`)
	if code, stderr := runCaptured(t, "list", "--config", cfg); code != exitOK {
		t.Fatalf("list (grpcshop, CreateOrder): exit %d: %s", code, stderr)
	}
	cfg, text = initGRPC(t, nowhere, "--protoset", shop, "--rpc", "shop.v1.CheckoutService/CreateRefund")
	wantLines(t, text, "key: {field: idempotency_key, first_sent: true}", "amountCents: 1", "{name: changed-amount-cents, patch: {amountCents: 2}}",
		"- name: anonymous", "# TODO: no credential metadata was given")
	if code, stderr := runCaptured(t, "list", "--config", cfg); code != exitOK {
		t.Fatalf("list (grpcshop, CreateRefund): exit %d: %s", code, stderr)
	}
}

// TestInitGRPCTLS: a grpcs:// service is described through the TLS
// flags, which the config keeps (tls:), so that list and run reach it
// as init did.
func TestInitGRPCTLS(t *testing.T) {
	pki := demotest.NewPKI(t)
	certFile, keyFile := pki.ServerFiles(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := grpcref.New(grpcref.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	base := serveServices(t, svc.Register, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})))
	// Without the CA the certificate is not trusted: no connection.
	if code, stderr := runCaptured(t, "init", "--grpc", base, "-o", "-"); code != exitUnreachable {
		t.Fatalf("grpcs:// without --ca-cert: exit %d, want 4: %s", code, stderr)
	}
	cfg, text := initGRPC(t, base, "--ca-cert", pki.CAFile, "--metadata", "authorization: Bearer alice")
	wantLines(t, text, "base_url: "+base, "tls: {ca_cert: "+pki.CAFile+"} # from the TLS flags")
	t.Setenv("IDEMCHECK_TOKEN_1", "alice")
	t.Setenv("IDEMCHECK_TOKEN_2", "bob")
	code, stderr := runCaptured(t, "run", "--config", fillTODOs(t, cfg, referenceBody, "", nil))
	if code != exitOK && code != exitIncomplete {
		t.Fatalf("run over TLS: exit %d, want 0 or 5: %s", code, stderr)
	}
}

// TestInitGRPCErrors: one line each, with the documented exit code.
func TestInitGRPCErrors(t *testing.T) {
	healthBase := serveServices(t, func(s *grpc.Server) {
		healthpb.RegisterHealthServer(s, health.NewServer())
		reflection.Register(s)
	})
	svc, err := grpcref.New(grpcref.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	payments := serveServices(t, svc.Register)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no method with a key", []string{"--grpc", healthBase}, exitUsage,
			"init --grpc found no method with a request message with AIP-155's string request_id or a field of AEP-155's IdempotencyKey shape"},
		{"an unknown --rpc", []string{"--grpc", payments, "--rpc", "idemcheck.reference.v1.PaymentService/Charge"}, exitUsage,
			`--rpc "idemcheck.reference.v1.PaymentService/Charge": no unary method`},
		{"unreachable", []string{"--grpc", "grpc://" + testenv.FreeAddr(t)}, exitUnreachable, "target unreachable"},
		{"not a gRPC URL", []string{"--grpc", "http://127.0.0.1:1"}, exitUsage, "want grpc://host:port or grpcs://host:port"},
		{"--protoset without --grpc", []string{"--probe", "http://127.0.0.1:1/x", "--protoset", "x"}, exitUsage, "go with --grpc"},
		{"--header with --grpc", []string{"--grpc", payments, "--header", "A: b"}, exitUsage, "(gRPC: --metadata, --key-metadata)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := runCaptured(t, append([]string{"init"}, append(tc.args, "-o", "-")...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("exit %d, stderr %q; want %d and one line with %q", code, stderr, tc.code, tc.want)
			}
		})
	}
}

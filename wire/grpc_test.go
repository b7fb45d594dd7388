package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	v1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// healthServer serves grpc.health.v1.Health on a loopback port, refusing
// calls without "authorization: Bearer t" (so metadata must get through);
// reflect registers the reflection service(s) it is given.
func healthServer(t testing.TB, reflect func(*grpc.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get("authorization"); len(v) != 1 || v[0] != "Bearer t" {
			return nil, status.Error(codes.Unauthenticated, "no bearer")
		}
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(g, health.NewServer())
	if reflect != nil {
		reflect(g)
	}
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	return "grpc://" + ln.Addr().String()
}

func healthTarget(base string) *apispec.Target {
	return &apispec.Target{BaseURL: base, KeySyntax: apispec.Raw, Key: &apispec.KeyPlace{Metadata: "x-idempotency-key"}, KeyHeader: "x-idempotency-key",
		Principals: []apispec.Principal{{Name: "a", Headers: map[string]string{"authorization": "Bearer t"}}}}
}

func check(t *testing.T, c *wire.GRPC, base, service string, principal int) (wire.Resp, wire.Exchange) {
	t.Helper()
	tg := healthTarget(base)
	op := &apispec.Operation{Method: "POST", Path: "/grpc.health.v1.Health/Check", Body: json.RawMessage(`{"service":"` + service + `"}`)}
	x := wire.Build(tg, op, wire.Request{Key: "k1", Principal: principal})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return c.Do(ctx, x)
}

func TestGRPCCarrier(t *testing.T) {
	base := healthServer(t, func(g *grpc.Server) { reflection.Register(g) })
	c := wire.NewGRPC(healthTarget(base))
	defer c.Close()

	r, x := check(t, c, base, "", 0)
	if r.Err != nil || r.Status != 200 || string(r.Body) != `{"status":"SERVING"}` || r.Header.Get("Grpc-Status") != "0" {
		t.Fatalf("Check: %s (header %v)", r, r.Header)
	}
	if x.Response == nil || string(x.Response.Body) != string(r.Body) || x.Request.Header.Get("X-Idempotency-Key") != "k1" {
		t.Fatalf("exchange: %+v", x)
	}
	if cmd := x.Curl(); !strings.HasPrefix(cmd, "grpcurl -plaintext -H 'authorization: Bearer t' -H 'x-idempotency-key: k1' -d ") ||
		!strings.HasSuffix(cmd, " grpc.health.v1.Health/Check") {
		t.Errorf("reproduction: %s", cmd)
	}
	// NOT_FOUND stands for 404; the code travels in Grpc-Status, the
	// google.rpc.Status in the body.
	if r, _ := check(t, c, base, "nope", 0); r.Err != nil || r.Status != 404 || r.Header.Get("Grpc-Status") != "5" ||
		!strings.Contains(string(r.Body), `"code":5`) || !strings.HasPrefix(r.String(), "NOT_FOUND (404)") {
		t.Fatalf("unknown service: %s", r)
	}
	// No principal, no metadata: UNAUTHENTICATED, 401.
	if r, _ := check(t, c, base, "", -1); r.Status != 401 {
		t.Fatalf("no credentials: %s", r)
	}
}

// TestGRPCUntimed: a carrier made Untimed (no stats handler on its
// connection) answers as the timed one does: OK with its metadata, an
// error status in a trailers-only answer, no credentials; a call nobody
// answered is still a transport error. Only the send is not timed.
func TestGRPCUntimed(t *testing.T) {
	base := healthServer(t, func(g *grpc.Server) { reflection.Register(g) })
	timed := wire.NewGRPC(healthTarget(base))
	defer timed.Close()
	untimed := timed.Untimed().(*wire.GRPC)
	defer untimed.Close()
	for _, c := range []struct {
		service   string
		principal int
	}{{"", 0}, {"nope", 0}, {"", -1}} {
		a, _ := check(t, timed, base, c.service, c.principal)
		b, _ := check(t, untimed, base, c.service, c.principal)
		if a.Err != nil || b.Err != nil || a.Status != b.Status || string(a.Body) != string(b.Body) ||
			!reflect.DeepEqual(a.Header, b.Header) || !bytes.Equal(a.Binary, b.Binary) {
			t.Fatalf("service %q principal %d: timed %s %v, untimed %s %v", c.service, c.principal, a, a.Header, b, b.Header)
		}
		if a.Sent.IsZero() || !b.Sent.IsZero() {
			t.Fatalf("sent: timed %v, untimed %v; want only the timed one's", a.Sent, b.Sent)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "grpc://" + ln.Addr().String()
	ln.Close()
	nobody := wire.NewGRPC(healthTarget(gone)).Untimed().(*wire.GRPC)
	defer nobody.Close()
	if r, _ := check(t, nobody, gone, "", 0); r.Err == nil {
		t.Fatalf("a call nobody answered: %s, want a transport error", r)
	}
}

func TestGRPCReflectionV1Alpha(t *testing.T) {
	base := healthServer(t, func(g *grpc.Server) {
		v1alpha.RegisterServerReflectionServer(g, reflection.NewServer(reflection.ServerOptions{Services: g}))
	})
	c := wire.NewGRPC(healthTarget(base))
	defer c.Close()
	if r, _ := check(t, c, base, "", 0); r.Status != 200 {
		t.Fatalf("through v1alpha reflection: %s", r)
	}
}

func TestGRPCProtosetAndNoReflection(t *testing.T) {
	base := healthServer(t, nil)
	c := wire.NewGRPC(healthTarget(base))
	r, _ := check(t, c, base, "", 0)
	c.Close()
	if r.Err == nil || !strings.Contains(r.Err.Error(), "protoset") {
		t.Fatalf("no reflection, no protoset: %v, want an error naming protoset:", r)
	}
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(healthpb.File_grpc_health_v1_health_proto)}}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "health.protoset")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	tg := healthTarget(base)
	tg.Protoset = path
	c = wire.NewGRPC(tg)
	defer c.Close()
	if r, _ := check(t, c, base, "", 0); r.Status != 200 {
		t.Fatalf("through the protoset: %s", r)
	}
}

func TestGRPCUnreachableAndClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "grpc://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	tg := healthTarget(base)
	client := wire.Client(tg, 2*time.Second)
	unreached := wire.NewCarrier(tg, client)
	defer unreached.Close()
	if _, err := wire.Preflight(t.Context(), tg, unreached, client); err == nil {
		t.Fatal("preflight passed with nothing listening")
	}
	c := wire.NewGRPC(tg)
	defer c.Close()
	if r, _ := check(t, c, base, "", 0); r.Err == nil {
		t.Fatalf("a call nobody answered: %s, want a transport error", r)
	}

	// Through the target's carrier, as the engine sends.
	live := healthServer(t, func(g *grpc.Server) { reflection.Register(g) })
	tl := healthTarget(live)
	hc := wire.Client(tl, 5*time.Second)
	car := wire.NewCarrier(tl, hc)
	defer car.Close()
	if _, err := wire.Preflight(t.Context(), tl, car, hc); err != nil {
		t.Fatal(err)
	}
	op := &apispec.Operation{Method: "POST", Path: "/grpc.health.v1.Health/Check", Body: json.RawMessage(`{}`)}
	resp, _ := car.Do(t.Context(), car.Build(op, wire.Request{Key: "k2"}))
	if resp.Status != http.StatusOK || string(resp.Body) != `{"status":"SERVING"}` || len(resp.Binary) == 0 || resp.Sent.IsZero() {
		t.Fatalf("through the carrier: %s (binary %d bytes, sent %v)", resp, len(resp.Binary), resp.Sent)
	}
}

func TestKeyField(t *testing.T) {
	op := &apispec.Operation{Method: "POST", Path: "/p.S/M", Body: json.RawMessage(`{"parent":"accounts/a1"}`)}
	aip := &apispec.Target{BaseURL: "grpc://127.0.0.1:1", Key: &apispec.KeyPlace{Field: "request_id"}}
	if x := wire.Build(aip, op, wire.Request{Key: "k"}); string(x.Request.Body) != `{"parent":"accounts/a1","request_id":"k"}` {
		t.Errorf("AIP-155: %s", x.Request.Body)
	}
	if x := wire.Build(aip, op, wire.Request{NoKey: true}); string(x.Request.Body) != `{"parent":"accounts/a1"}` {
		t.Errorf("no key: %s", x.Request.Body)
	}
	aep, _, err := apispec.ParseConfig([]byte("base_url: grpc://127.0.0.1:1\nkey: {field: idempotency_key, first_sent: true}\n" +
		"principals: [{name: a, metadata: {authorization: Bearer a}}]\noperations: [{name: r, rpc: p.S/M, body: {parent: accounts/a1}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	first := wire.Build(aep, op, wire.Request{Key: "k"})
	time.Sleep(2 * time.Millisecond)
	again := wire.Build(aep, op, wire.Request{Key: "k"})
	var body struct {
		Key struct {
			Key       string    `json:"key"`
			FirstSent time.Time `json:"first_sent"`
		} `json:"idempotency_key"`
	}
	if err := json.Unmarshal(first.Request.Body, &body); err != nil || body.Key.Key != "k" || body.Key.FirstSent.IsZero() {
		t.Fatalf("AEP-155: %s (%v)", first.Request.Body, err)
	}
	if string(first.Request.Body) != string(again.Request.Body) {
		t.Errorf("a retry's first_sent changed: %s then %s", first.Request.Body, again.Request.Body)
	}
}

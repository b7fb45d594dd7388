package wire_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// TestGRPCErrorDetails: an error's details are in the recorded body, so a
// replayed error is compared with them: AIP-193's (google.rpc's) decoded,
// a detail of a type idemcheck does not know kept as its type URL and
// bytes. Before, any detail idemcheck could not decode dropped them all.
// (This test binary links errdetails itself; examples/grpcshop's test
// checks that the idemcheck binary decodes an ErrorInfo.)
func TestGRPCErrorDetails(t *testing.T) {
	declined, err := status.New(codes.FailedPrecondition, "declined").WithDetails(&errdetails.ErrorInfo{Reason: "CARD_DECLINED", Domain: "shop.example"})
	if err != nil {
		t.Fatal(err)
	}
	custom := status.ErrorProto(&spb.Status{Code: int32(codes.FailedPrecondition), Message: "declined",
		Details: []*anypb.Any{{TypeUrl: "type.googleapis.com/acme.v1.Decline", Value: []byte{0x0a, 0x02, 'n', 'o'}}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.UnaryInterceptor(func(_ context.Context, req any, _ *grpc.UnaryServerInfo, _ grpc.UnaryHandler) (any, error) {
		if req.(*healthpb.HealthCheckRequest).GetService() == "custom" {
			return nil, custom
		}
		return nil, declined.Err()
	}))
	healthpb.RegisterHealthServer(g, health.NewServer())
	reflection.Register(g)
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	tg := &apispec.Target{BaseURL: "grpc://" + ln.Addr().String(), KeySyntax: apispec.Raw, Key: &apispec.KeyPlace{Metadata: "x-idempotency-key"}, KeyHeader: "x-idempotency-key"}
	c := wire.NewGRPC(tg)
	defer c.Close()
	for service, want := range map[string]string{
		"":       `{"code":9,"message":"declined","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"CARD_DECLINED","domain":"shop.example"}]}`,
		"custom": `{"code":9,"details":[{"@type":"type.googleapis.com/acme.v1.Decline","value":"CgJubw=="}],"message":"declined"}`,
	} {
		op := &apispec.Operation{Method: "POST", Path: "/grpc.health.v1.Health/Check", Body: json.RawMessage(`{"service":"` + service + `"}`)}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		r, _ := c.Do(ctx, wire.Build(tg, op, wire.Request{Key: "k1", Principal: -1}))
		cancel()
		if r.Err != nil || r.Status != 400 || strings.ReplaceAll(string(r.Body), " ", "") != want {
			t.Errorf("service %q: %s %s, want body %s", service, r, r.Body, want)
		}
	}
}

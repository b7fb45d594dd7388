package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
	"github.com/idemcheck/idemcheck/wire"
)

// grpcRig is the reference gRPC payments service (what serve --grpc
// serves) behind a gRPC proxy, and a client of the proxy.
type grpcRig struct {
	client  paymentsv1.PaymentServiceClient
	url     string // the proxy's grpc:// URL
	effects string // the reference's HTTP base: its effects oracle
	rec     *recorded
}

// describe resolves the reference's methods from its compiled
// descriptors (no network: a test may stop the upstream).
func describe(_ context.Context, path string) (protoreflect.MethodDescriptor, error) {
	svc, name, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	sd := paymentsv1.File_payments_proto.Services().ByName(protoreflect.FullName(svc).Name())
	if sd == nil || string(sd.FullName()) != svc || sd.Methods().ByName(protoreflect.Name(name)) == nil {
		return nil, fmt.Errorf("no method %s", path)
	}
	return sd.Methods().ByName(protoreflect.Name(name)), nil
}

var (
	createPayment = paymentsv1.PaymentService_CreatePayment_FullMethodName
	createRefund  = paymentsv1.PaymentService_CreateRefund_FullMethodName
)

// startGRPC runs the gRPC proxy with rules in front of upstream (a
// grpc:// URL; "" runs the reference service), with the key where opt
// puts it; the history goes to the rig's buffer.
func startGRPC(t *testing.T, upstream string, key chaos.Option, rules ...string) *grpcRig {
	t.Helper()
	rig := &grpcRig{}
	if upstream == "" {
		rig.effects, upstream = demotest.ServeGRPC(t, demo.Options{})
	}
	var buf bytes.Buffer
	h := chaos.NewHistory(&buf)
	p, err := chaos.NewGRPC(upstream, key, chaos.WithMethods(describe, createPayment, createRefund),
		chaos.WithIDPointer("/name"), chaos.WithHistory(h), chaos.WithSeed(1), chaos.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if _, err := p.AddRule(r); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := chaos.ListenGRPC(p)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(strings.TrimPrefix(srv.URL, "grpc://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Close()
		p.Close()
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	rig.client, rig.url, rig.rec = paymentsv1.NewPaymentServiceClient(conn), srv.URL, &recorded{h, &buf}
	return rig
}

// result is what a call through the proxy came back with.
type result struct {
	p       *paymentsv1.Payment
	err     error
	trailer metadata.MD
}

// pay calls CreatePayment with key as its request_id (AIP-155), and in
// x-idempotency-key metadata too, within d.
func (r *grpcRig) pay(t *testing.T, key string, d time.Duration) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer alice", "x-idempotency-key", key)
	var res result
	res.p, res.err = r.client.CreatePayment(ctx, &paymentsv1.CreatePaymentRequest{
		Parent: "accounts/a1", Payment: &paymentsv1.Payment{Amount: 1000, Currency: "USD"}, RequestId: key,
	}, grpc.Trailer(&res.trailer))
	return res
}

// executions is the reference's count of key's executions.
func (r *grpcRig) executions(t *testing.T, key string) int {
	t.Helper()
	resp, err := http.Get(r.effects + "/v1/effects?key=" + key)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Executions int `json:"executions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v.Executions
}

// TestGRPCDropResponse: the gRPC form of the core fault. The upstream
// runs the call to its end (one execution, a payment created), the client
// gets UNAVAILABLE labelled by the proxy instead of the answer, and the
// retry with the same key gets the stored payment. The history has both
// attempts, numbered by the key read from the message (AIP-155), the
// metadata or AEP-155's {key, first_sent}, with the created id.
func TestGRPCDropResponse(t *testing.T) {
	for _, place := range []string{"request_id", "metadata", "idempotency_key"} {
		t.Run(place, func(t *testing.T) {
			opt := chaos.WithKeyField(place)
			if place == "metadata" {
				opt = chaos.WithKeyHeader("x-idempotency-key")
			}
			rig := startGRPC(t, "", opt, "drop-response:attempt=1")
			key := "drop-" + place
			call := func() result { return rig.pay(t, key, 5*time.Second) }
			if place == "idempotency_key" {
				sent := timestamppb.Now()
				call = func() result { return rig.refund(t, key, sent) }
			}
			first := call()
			if status.Code(first.err) != codes.Unavailable || first.trailer.Get("idemcheck-fault")[0] != "drop-response" {
				t.Fatalf("first call: %v, trailer %v; want UNAVAILABLE labelled drop-response", first.err, first.trailer)
			}
			if n := rig.executions(t, key); n != 1 {
				t.Fatalf("the upstream executed the dropped call %d times, want 1 (it commits, then the answer is lost)", n)
			}
			second := call()
			if second.err != nil || len(second.trailer.Get("idemcheck-fault")) != 0 {
				t.Fatalf("retry: %v, trailer %v; want the stored payment, unlabelled", second.err, second.trailer)
			}
			evs := events(t, rig.rec, 2)
			if len(evs) != 2 {
				t.Fatalf("%d history lines, want 2 (server reflection is never recorded): %+v", len(evs), evs)
			}
			a, b := evs[0], evs[1]
			if a.Key != key || a.Attempt != 1 || a.Fault != "drop-response" || a.Client != chaos.ClientUnknown ||
				len(a.Upstream) != 1 || a.Upstream[0].Status != 200 || a.Upstream[0].GRPCCode != "OK" || a.Upstream[0].ID == "" {
				t.Errorf("dropped attempt: %+v", a)
			}
			if b.Key != key || b.Attempt != 2 || b.Client != chaos.ClientOK || b.Status != 200 || b.Upstream[0].ID != a.Upstream[0].ID ||
				second.p.GetName() != a.Upstream[0].ID || b.RequestSHA256 != a.RequestSHA256 || a.Method != "POST" || !strings.HasPrefix(a.Path, "/idemcheck.reference.v1.PaymentService/") {
				t.Errorf("retry: %+v (client got %q), want the first's id %q and request digest", b, second.p.GetName(), a.Upstream[0].ID)
			}
			if n := rig.executions(t, key); n != 1 {
				t.Errorf("%d executions after the retry, want 1", n)
			}
		})
	}
}

// refund calls CreateRefund under an AEP-155 key {key, first_sent}.
func (r *grpcRig) refund(t *testing.T, key string, sent *timestamppb.Timestamp) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer alice")
	var res result
	res.p, res.err = r.client.CreateRefund(ctx, &paymentsv1.CreateRefundRequest{
		Parent: "accounts/a1", Payment: &paymentsv1.Payment{Amount: 1000, Currency: "USD"},
		IdempotencyKey: &paymentsv1.IdempotencyKey{Key: key, FirstSent: sent},
	}, grpc.Trailer(&res.trailer))
	return res
}

// TestGRPCFaults: each fault's gRPC form, by what the client saw, what
// the upstream executed and what the history says.
func TestGRPCFaults(t *testing.T) {
	rig := startGRPC(t, "", chaos.WithKeyField("request_id"),
		"drop-request:header=x-case:drop-request",
		"drop-response:mode=deadline,header=x-case:deadline",
		"delay:before=80ms,header=x-case:delay-before",
		"delay:after=3s,header=x-case:delay-after",
		"duplicate:mode=sequential,header=x-case:duplicate",
		"status:code=ABORTED,header=x-case:status",
	)
	cases := []struct {
		name, kind string
		within     time.Duration
		code       codes.Code
		label      string // the fault trailer the client must see ("": none)
		executed   int
		client     string
		check      func(ev chaos.Event) bool
	}{
		{"drop-request", "drop-request", 5 * time.Second, codes.Unavailable, "drop-request", 0, chaos.ClientUnknown,
			func(ev chaos.Event) bool { return len(ev.Upstream) == 0 }},
		{"deadline", "drop-response", 300 * time.Millisecond, codes.DeadlineExceeded, "", 1, chaos.ClientUnknown,
			func(ev chaos.Event) bool {
				return ev.DurationNS >= int64(250*time.Millisecond) && ev.Upstream[0].ID != ""
			}},
		{"delay-before", "delay", 5 * time.Second, codes.OK, "delay", 1, chaos.ClientOK,
			func(ev chaos.Event) bool { return ev.Upstream[0].SentNS >= int64(80*time.Millisecond) }},
		{"delay-after", "delay", 300 * time.Millisecond, codes.DeadlineExceeded, "", 1, chaos.ClientUnknown,
			func(ev chaos.Event) bool { return ev.Upstream[0].Status == 200 }},
		{"duplicate", "duplicate", 5 * time.Second, codes.OK, "duplicate", 1, chaos.ClientOK,
			func(ev chaos.Event) bool { return len(ev.Upstream) == 2 && ev.Upstream[0].ID == ev.Upstream[1].ID }},
		{"status", "status", 5 * time.Second, codes.Aborted, "status", 0, chaos.ClientFail,
			func(ev chaos.Event) bool { return len(ev.Upstream) == 0 && ev.Status == 409 }},
	}
	for i, tc := range cases {
		key := "fault-" + tc.name
		ctx, cancel := context.WithTimeout(t.Context(), tc.within)
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer alice", "x-case", tc.name)
		var trailer metadata.MD
		_, err := rig.client.CreatePayment(ctx, &paymentsv1.CreatePaymentRequest{
			Parent: "accounts/a1", Payment: &paymentsv1.Payment{Amount: 1000, Currency: "USD"}, RequestId: key,
		}, grpc.Trailer(&trailer))
		cancel()
		label := ""
		if v := trailer.Get("idemcheck-fault"); len(v) > 0 {
			label = v[0]
		}
		if status.Code(err) != tc.code || label != tc.label {
			t.Errorf("%s: %v, label %q; want %s, label %q", tc.name, err, label, tc.code, tc.label)
		}
		// A call held past the client's deadline is still being answered
		// upstream; its history line comes when the proxy is done.
		evs := events(t, rig.rec, i+1)
		ev := evs[len(evs)-1]
		if ev.Key != key || ev.Fault != tc.kind || ev.Client != tc.client || !tc.check(ev) {
			t.Errorf("%s: history %+v", tc.name, ev)
		}
		if n := rig.executions(t, key); n != tc.executed {
			t.Errorf("%s: %d executions, want %d", tc.name, n, tc.executed)
		}
	}
}

// TestGRPCUpstreamDown: an upstream that does not answer is the
// proxy's UNAVAILABLE labelled "upstream", recorded with the error; the
// client cannot know whether it ran (unknown), as over HTTP (502).
func TestGRPCUpstreamDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rig := startGRPC(t, "grpc://"+addr, chaos.WithKeyField("request_id"))
	res := rig.pay(t, "down", 5*time.Second)
	if status.Code(res.err) != codes.Unavailable || len(res.trailer.Get("idemcheck-fault")) == 0 || res.trailer.Get("idemcheck-fault")[0] != "upstream" {
		t.Fatalf("%v, trailer %v; want UNAVAILABLE labelled upstream", res.err, res.trailer)
	}
	ev := events(t, rig.rec, 1)[0]
	if ev.Key != "down" || ev.Client != chaos.ClientUnknown || len(ev.Upstream) != 1 || ev.Upstream[0].Error == "" {
		t.Fatalf("history %+v", ev)
	}
}

// TestGRPCThroughCarrier: the driver's carrier through the proxy. Its
// method descriptors come by server reflection, a streaming call the
// proxy passes through unrecorded; the proxy's label reaches it as the
// Idemcheck-Fault header the driver reads, on an UNAVAILABLE (503).
func TestGRPCThroughCarrier(t *testing.T) {
	httpBase, grpcBase := demotest.ServeGRPC(t, demo.Options{})
	tg, _, err := apispec.ParseConfig([]byte(demotest.GRPCConfig(httpBase, grpcBase)))
	if err != nil {
		t.Fatal(err)
	}
	upstream := wire.NewGRPC(tg)
	defer upstream.Close()
	var buf bytes.Buffer
	h := chaos.NewHistory(&buf)
	p, err := chaos.NewGRPC(grpcBase, chaos.WithKeyField("request_id"), chaos.WithMethods(upstream.Method, createPayment),
		chaos.WithIDPointer("/name"), chaos.WithHistory(h))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddRule("drop-response:attempt=1"); err != nil {
		t.Fatal(err)
	}
	srv, err := chaos.ListenGRPC(p)
	if err != nil {
		t.Fatal(err)
	}
	via := *tg
	via.BaseURL = srv.URL
	calls := wire.NewGRPC(&via)
	defer func() {
		calls.Close()
		srv.Close()
		p.Close()
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	}()
	op := &tg.Operations[0]
	var got []wire.Resp
	for range 2 {
		x := wire.Build(tg, op, wire.Request{Key: "carrier-1", Base: srv.URL})
		resp, _ := calls.Do(t.Context(), x)
		got = append(got, resp)
	}
	if got[0].Err != nil || got[0].Status != 503 || got[0].Header.Get(chaos.FaultHeader) != "drop-response" {
		t.Fatalf("dropped call: %v status %d header %v", got[0].Err, got[0].Status, got[0].Header)
	}
	if !got[1].OK() || !strings.Contains(string(got[1].Body), `"name":"accounts/a1/payments/`) {
		t.Fatalf("retry: %v", got[1])
	}
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(buf.Bytes(), []byte("\n")); n != 2 {
		t.Fatalf("%d history lines, want the 2 attempts (reflection passes unrecorded):\n%s", n, buf.String())
	}
}

// TestParseGRPCRule: the kinds without a gRPC form and the HTTP-only
// modes are refused by name; an HTTP-parsed rule is parsed again for gRPC
// when added, and refused there when it has no gRPC form.
func TestParseGRPCRule(t *testing.T) {
	for spec, want := range map[string]string{
		"reset-midbody":            "reset-midbody has no gRPC form yet",
		"truncate-request:p=0.5":   "truncate-request has no gRPC form yet",
		"drop-response:mode=rst":   `token "mode=rst": want one of unavailable, deadline`,
		"drop-request:mode=fin":    `token "mode=fin": want one of unavailable, deadline`,
		"status:code=OK":           `token "code=OK": want a gRPC code other than OK`,
		"status:code=503":          `token "code=503": want a gRPC code other than OK`,
		"duplicate:mode=sometimes": `token "mode=sometimes"`,
	} {
		if _, err := chaos.ParseGRPCRule(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
	for _, spec := range []string{"drop-response:0.3", "drop-response:mode=deadline", "drop-request", "delay:before=1ms", "duplicate", "status:code=14", "status:code=aborted"} {
		if _, err := chaos.ParseGRPCRule(spec); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
	if _, err := chaos.ParseRule("drop-response:mode=deadline"); err == nil {
		t.Error("drop-response:mode=deadline parsed for HTTP, which has no such mode")
	}
	p, err := chaos.NewGRPC("grpc://127.0.0.1:1", chaos.WithMethods(describe, createPayment))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	httpRules, err := chaos.ParseRules([]string{"drop-response:0.5", "reset-midbody"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := p.Add(httpRules[0]); err != nil || r.ID != "1" {
		t.Errorf("drop-response parsed for HTTP, added to a gRPC proxy: %+v, %v", r, err)
	}
	if _, err := p.Add(httpRules[1]); err == nil || !strings.Contains(err.Error(), "no gRPC form") {
		t.Errorf("reset-midbody added to a gRPC proxy: %v", err)
	}
	if _, err := chaos.NewGRPC("http://127.0.0.1:1", chaos.WithMethods(describe, createPayment)); err == nil {
		t.Error("an http:// upstream accepted by the gRPC proxy")
	}
	if _, err := chaos.NewGRPC("grpc://127.0.0.1:1"); err == nil {
		t.Error("a gRPC proxy without its methods accepted")
	}
}

// namedPayments answers every CreatePayment with a payment named after
// its server, so that a test sees which replica a call reached.
type namedPayments struct {
	paymentsv1.UnimplementedPaymentServiceServer
	name string
}

func (s namedPayments) CreatePayment(context.Context, *paymentsv1.CreatePaymentRequest) (*paymentsv1.Payment, error) {
	return &paymentsv1.Payment{Name: s.name}, nil
}

// TestGRPCReplicas: with WithReplicas the gRPC proxy sends calls to its
// upstreams in turn (a connection each), and records which one created
// what; a replica that is not a gRPC URL is refused.
func TestGRPCReplicas(t *testing.T) {
	var ups []string
	for i := range 3 {
		g := grpc.NewServer()
		paymentsv1.RegisterPaymentServiceServer(g, namedPayments{name: fmt.Sprintf("payments/r%d", i)})
		ups = append(ups, demotest.ServeGRPCServer(t, g))
	}
	var buf bytes.Buffer
	h := chaos.NewHistory(&buf)
	p, err := chaos.NewGRPC(ups[0], chaos.WithReplicas(ups[1:]...), chaos.WithKeyField("request_id"),
		chaos.WithMethods(describe, createPayment), chaos.WithIDPointer("/name"), chaos.WithHistory(h), chaos.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := chaos.ListenGRPC(p)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(strings.TrimPrefix(srv.URL, "grpc://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	client := paymentsv1.NewPaymentServiceClient(conn)
	var got []string
	for range 6 {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		pay, err := client.CreatePayment(ctx, &paymentsv1.CreatePaymentRequest{RequestId: "same-key"})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pay.GetName())
	}
	_ = conn.Close()
	srv.Close()
	p.Close() // every call's line is written
	evs := events(t, &recorded{h, &buf}, 6)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if want := "payments/r0 payments/r1 payments/r2 payments/r0 payments/r1 payments/r2"; strings.Join(got, " ") != want {
		t.Errorf("calls reached %v, want the upstreams in turn: %s", got, want)
	}
	for i, ev := range evs {
		if ev.Attempt != i+1 || len(ev.Upstream) != 1 || ev.Upstream[0].ID != got[i] {
			t.Errorf("history line %d: %+v, want attempt %d created %s", i, ev, i+1, got[i])
		}
	}
	for _, bad := range []string{"http://127.0.0.1:1", "grpc://127.0.0.1"} {
		if _, err := chaos.NewGRPC(ups[0], chaos.WithReplicas(bad), chaos.WithMethods(describe, createPayment)); err == nil || !strings.Contains(err.Error(), "replica") {
			t.Errorf("replica %q: %v, want refused naming the replica", bad, err)
		}
	}
}

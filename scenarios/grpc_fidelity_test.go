package scenarios

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/grpcref"
	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// grpcVolatileServer serves the reference gRPC service with volatile
// request fields left out of its fingerprint; it returns the effects
// oracle's and the service's base URLs.
func grpcVolatileServer(t *testing.T, volatile []string) (httpBase, grpcBase string) {
	t.Helper()
	store := memstore.New()
	app, err := demo.New(demo.Options{Store: store, TTL: 3 * time.Second, Lease: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := grpcref.New(grpcref.Options{Store: store, TTL: 3 * time.Second, Lease: 3 * time.Second, Executing: app.Executing, VolatileFields: volatile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(); _ = app.Close(); _ = store.Close() })
	g := grpc.NewServer()
	svc.Register(g)
	return demotest.ServeOn(t, app, "127.0.0.1:0"), demotest.ServeGRPCServer(t, g)
}

// runGRPCConfig runs cases ids against the config grpcConfig writes for
// the servers, edited by the replacements (old, new, ...).
func runGRPCConfig(t *testing.T, httpBase, grpcBase string, strict bool, ids []string, replacements ...string) *Report {
	t.Helper()
	cfg := grpcConfig(httpBase, grpcBase, "aip")
	for i := 0; i+1 < len(replacements); i += 2 {
		if !strings.Contains(cfg, replacements[i]) {
			t.Fatalf("config has no %q", replacements[i])
		}
		cfg = strings.Replace(cfg, replacements[i], replacements[i+1], 1)
	}
	tg, p, err := apispec.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), tg, p, RunOptions{Run: ids, Strict: strict})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestGRPCVolatileFields: replay/volatile-fields over gRPC, the changed
// value keeping the field's protobuf type (a string, a Timestamp): a
// service that leaves the field out of its fingerprint replays; one that
// does not refuses the retry (INVALID_ARGUMENT), a SHOULD's miss (warn,
// the run failing under strict).
func TestGRPCVolatileFields(t *testing.T) {
	body := `payment: {amount: 1000, currency: USD}`
	rows := []struct {
		name, explain  string
		server, fields []string
		payment        string
		want           Status
	}{
		{"string-ignored", "the description left out of the fingerprint: the retry with another one replays",
			[]string{"/payment/description"}, []string{"/payment/description"}, `payment: {amount: 1000, currency: USD, description: note}`, Pass},
		{"timestamp-ignored", "a Timestamp a second later, spelled RFC 3339 as protojson wants it, left out of the fingerprint: replayed",
			[]string{"/payment/createTime"}, []string{"/payment/createTime"}, `payment: {amount: 1000, currency: USD, createTime: "2025-01-01T00:00:00Z"}`, Pass},
		{"fingerprinted", "the service fingerprints the field the profile calls volatile: INVALID_ARGUMENT, a replay expected",
			nil, []string{"/payment/description"}, `payment: {amount: 1000, currency: USD, description: note}`, Warn},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			httpBase, grpcBase := grpcVolatileServer(t, row.server)
			fields, _ := json.Marshal(row.fields)
			rep := runGRPCConfig(t, httpBase, grpcBase, true, []string{"replay/volatile-fields"},
				body, row.payment, "overrides: {", "overrides: {volatile_fields: "+string(fields)+", ")
			if ok, _ := rep.Outcome(); len(rep.Results) != 1 || rep.Results[0].Status != row.want || ok != (row.want == Pass) {
				t.Fatalf("%s: want %s, the run failing under strict unless it passes:%s", row.explain, row.want, verdicts(rep))
			}
			if r := rep.Results[0]; row.want == Warn && !strings.Contains(r.Observed, "INVALID_ARGUMENT") {
				t.Fatalf("%s: observed %q", row.explain, r.Observed)
			}
		})
	}
}

// TestGRPCLargeOverLimit: a large answer over the client's 4 MiB receive
// limit is the client's refusal, not a status of the server's:
// fidelity/large-body has nothing to replay and says why.
func TestGRPCLargeOverLimit(t *testing.T) {
	tg, p := grpcTarget(t, "aip", nil)
	tg.Operations[0].Variants[apispec.VariantLarge] = apispec.Variant{Patch: json.RawMessage(`{"knobs":{"pad_bytes":5242880}}`)}
	rep, err := Run(t.Context(), tg, p, RunOptions{Run: []string{"fidelity/large-body"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Status != Inconclusive || !strings.Contains(r.Reason, "over the client's 4194304-byte receive limit") {
		t.Fatalf("want inconclusive, the answer over the receive limit:%s", verdicts(rep))
	}
}

// TestGRPCLeaseOutlived: lease/slow-outlives-lease over gRPC, the slow
// variant (1.5 s) outliving the declared lease (500 ms). The reference
// presumes the owner dead when its lease ends, so the late retry claims
// the key and executes a second time (the lock that lapses, as over HTTP:
// TestLeaseSlowOutlivesLease): a SHOULD's miss. Built with
// lease-never-expires its claim lasts the TTL and the retry is ABORTED:
// one execution (that build fails lease/crash-recovers instead: cmd/idemcheck
// TestLeaseCrashRecovers).
func TestGRPCLeaseOutlived(t *testing.T) {
	rows := []struct {
		name    string
		defects []reference.Defect
		want    Status
		seen    string
	}{
		{"lease-lapses", nil, Warn, "2 executions"},
		{"lease-never-expires", []reference.Defect{reference.LeaseNeverExpires}, Pass, "ABORTED"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			httpBase, g := demotest.GRPCServer(t, demo.Options{TTL: 3 * time.Second, Lease: 500 * time.Millisecond}, row.defects)
			rep := runGRPCConfig(t, httpBase, demotest.ServeGRPCServer(t, g), true, []string{"lease/**"},
				"lease: 3s", "lease: 500ms", "slow: {patch: {knobs: {delay_ms: 600}}, duration: 600ms}", "slow: {patch: {knobs: {delay_ms: 1500}}, duration: 1500ms}")
			if ok, _ := rep.Outcome(); ok != (row.want == Pass) {
				t.Errorf("outcome %v under strict:%s", ok, verdicts(rep))
			}
			for _, r := range rep.Results {
				switch {
				case r.ID == "lease/crash-recovers" && r.Status == Skip && strings.Contains(r.Reason, "target-cmd"):
				case r.ID == "lease/slow-outlives-lease" && r.Status == row.want && strings.Contains(r.Observed, row.seen):
				default:
					t.Errorf("%s: %s, want lease/slow-outlives-lease %s with %q:%s", r.Name(), r.Status, row.want, row.seen, verdicts(rep))
				}
			}
		})
	}
}

// TestGRPCCutMessageNeverRuns grounds grpcNever's lost/truncated-request:
// a CreatePayment whose length-prefixed request message is cut (the
// stream ended, or reset, after half of it) never reaches the method:
// nothing executes and nothing is kept under its key, whose full retry
// then executes once. The cut is written with raw HTTP/2 frames, as no
// gRPC client sends one.
func TestGRPCCutMessageNeverRuns(t *testing.T) {
	httpBase, g := demotest.GRPCServer(t, demo.Options{TTL: 3 * time.Second, Lease: 3 * time.Second}, nil)
	grpcBase := demotest.ServeGRPCServer(t, g)
	tg, p, err := apispec.ParseConfig([]byte(grpcConfig(httpBase, grpcBase, "aip")))
	if err != nil {
		t.Fatal(err)
	}
	for _, end := range []string{"end-stream", "rst-stream"} {
		t.Run(end, func(t *testing.T) {
			key := uuid.NewString()
			msg, err := proto.Marshal(&paymentsv1.CreatePaymentRequest{Parent: "accounts/a1", RequestId: key,
				Payment: &paymentsv1.Payment{Amount: 1000, Currency: "USD"}})
			if err != nil {
				t.Fatal(err)
			}
			answer := cutCall(t, strings.TrimPrefix(grpcBase, "grpc://"), msg, end == "rst-stream")
			if n := effectsOf(t, httpBase, key); n != 0 {
				t.Fatalf("the cut message (answered %q) executed %d times", answer, n)
			}
			// The full retry under the same key executes, once.
			tg.Operations[0].Body = json.RawMessage(`{"parent":"accounts/a1","payment":{"amount":1000,"currency":"USD"}}`)
			rep, err := Run(t.Context(), tg, p, RunOptions{Run: []string{"replay/single-execution"}})
			if err != nil || rep.Results[0].Status != Pass {
				t.Fatalf("the service does not run after a cut message: %v%s", err, verdicts(rep))
			}
			t.Logf("cut by %s: answered %q, 0 executions", end, answer)
		})
	}
}

// cutCall sends CreatePayment over a raw HTTP/2 connection with half of
// msg after its full length prefix, then ends the stream (or resets it),
// and returns the grpc-status the server answered ("" after a reset).
func cutCall(t *testing.T, addr string, msg []byte, reset bool) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", addr},
		{":path", paymentsv1.PaymentService_CreatePayment_FullMethodName}, {"content-type", "application/grpc"},
		{"te", "trailers"}, {"authorization", "Bearer alice"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	frame := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
	frame = append(frame, msg[:len(msg)/2]...)
	for _, err := range []error{
		fr.WriteSettings(),
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true}),
		fr.WriteData(1, !reset, frame),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if reset {
		if err := fr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
			t.Fatal(err)
		}
		// The server's own frames until it has seen the reset: a PING
		// answered after it.
		if err := fr.WritePing(false, [8]byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	status := ""
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		if f.Name == "grpc-status" {
			status = f.Value
		}
	})
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if reset && f.IsAck() {
				time.Sleep(200 * time.Millisecond) // a handler that ran would have counted by now
				return status
			}
		case *http2.HeadersFrame:
			if _, err := dec.Write(f.HeaderBlockFragment()); err != nil {
				t.Fatal(err)
			}
			if f.StreamEnded() && !reset {
				return "grpc-status " + status
			}
		}
	}
}

// effectsOf is the reference's execution count under key.
func effectsOf(t *testing.T, httpBase, key string) int64 {
	t.Helper()
	resp, err := http.Get(httpBase + "/v1/effects?key=" + key)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Executions int64 }
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	return e.Executions
}

package grpcref_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/grpcref"
	pb "github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
	"github.com/idemcheck/idemcheck/reference/pgstore"
	"github.com/idemcheck/idemcheck/reference/redisstore"
)

// TestMain stops the shared databases the store tests started and fails
// on a leaked goroutine.
func TestMain(m *testing.M) { testenv.Main(m) }

// serve starts the service on a loopback port and returns a client and
// the executions counted per key.
func serve(t *testing.T, o grpcref.Options) (*grpc.ClientConn, func(key string) int64) {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int64{}
	o.Executing = func(key string, _ bool) func() {
		mu.Lock()
		counts[key]++
		mu.Unlock()
		return func() {}
	}
	s, err := grpcref.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	s.Register(g)
	go func() { _ = g.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		g.Stop()
		_ = s.Close()
	})
	return conn, func(key string) int64 {
		mu.Lock()
		defer mu.Unlock()
		return counts[key]
	}
}

// as is a call's context for user, bounded in time.
func as(t *testing.T, user string) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+user)
}

func payment(key string, amount int64) *pb.CreatePaymentRequest {
	return &pb.CreatePaymentRequest{Parent: "accounts/a1", RequestId: key, Payment: &pb.Payment{Amount: amount, Currency: "USD"}}
}

func code(err error) codes.Code { return status.Code(err) }

func TestAIPReplayMismatchMissing(t *testing.T) {
	conn, executions := serve(t, grpcref.Options{})
	replayMismatchMissing(t, conn, executions)
}

// TestStores: the service keeps its records in every reference store
// (the same Store interface as the HTTP reference).
func TestStores(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	t.Run("postgres", func(t *testing.T) {
		s, err := pgstore.Open(ctx, testenv.RequirePostgres(t))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		conn, executions := serve(t, grpcref.Options{Store: s})
		replayMismatchMissing(t, conn, executions)
	})
	t.Run("redis", func(t *testing.T) {
		s, err := redisstore.Open(ctx, testenv.RequireRedis(t))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		conn, executions := serve(t, grpcref.Options{Store: s})
		replayMismatchMissing(t, conn, executions)
	})
}

// replayMismatchMissing: a replay is the stored payment, a changed
// message INVALID_ARGUMENT, one execution; a missing or overlong key
// INVALID_ARGUMENT; another user's key is their own.
func replayMismatchMissing(t *testing.T, conn *grpc.ClientConn, executions func(string) int64) {
	t.Helper()
	c := pb.NewPaymentServiceClient(conn)
	k := uuid.NewString()
	first, err := c.CreatePayment(as(t, "alice"), payment(k, 1000))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.CreatePayment(as(t, "alice"), payment(k, 1000))
	if err != nil || !proto.Equal(first, again) {
		t.Fatalf("replay: %v, %v; want %v", again, err, first)
	}
	if _, err := c.CreatePayment(as(t, "alice"), payment(k, 1001)); code(err) != codes.InvalidArgument {
		t.Fatalf("changed amount under the same request_id: %v, want INVALID_ARGUMENT", err)
	}
	if n := executions(k); n != 1 {
		t.Fatalf("%d executions under %s, want 1", n, k)
	}
	if _, err := c.CreatePayment(as(t, "alice"), payment("", 1000)); code(err) != codes.InvalidArgument {
		t.Fatalf("empty request_id: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := c.CreatePayment(as(t, "alice"), payment(uuid.NewString()+"x", 1000)); code(err) != codes.InvalidArgument {
		t.Fatalf("37-character request_id: %v, want INVALID_ARGUMENT", err)
	}
	// bob's call under alice's key is his own.
	bobs, err := c.CreatePayment(as(t, "bob"), payment(k, 1000))
	if err != nil || bobs.GetName() == first.GetName() {
		t.Fatalf("bob under alice's key: %v, %v; want a payment of his own", bobs, err)
	}
}

func TestInFlightAborted(t *testing.T) {
	conn, executions := serve(t, grpcref.Options{})
	c := pb.NewPaymentServiceClient(conn)
	k := uuid.NewString()
	slow := payment(k, 1000)
	slow.Knobs = &pb.Knobs{DelayMs: 400}
	done := make(chan error, 1)
	go func() {
		_, err := c.CreatePayment(as(t, "alice"), slow)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for executions(k) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := c.CreatePayment(as(t, "alice"), slow); code(err) != codes.Aborted {
		t.Fatalf("duplicate in flight: %v, want ABORTED", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// refund is a CreateRefund request under AEP-155 key {key, sent}.
func refund(key string, sent time.Time) *pb.CreateRefundRequest {
	return &pb.CreateRefundRequest{Parent: "accounts/a1", Payment: &pb.Payment{Amount: 5, Currency: "usd"},
		IdempotencyKey: &pb.IdempotencyKey{Key: key, FirstSent: timestamppb.New(sent)}}
}

func TestAEPFirstSent(t *testing.T) {
	conn, executions := serve(t, grpcref.Options{TTL: time.Hour})
	c := pb.NewPaymentServiceClient(conn)
	k, sent := uuid.NewString(), time.Now()
	first, err := c.CreateRefund(as(t, "alice"), refund(k, sent))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := c.CreateRefund(as(t, "alice"), refund(k, sent)); err != nil || !proto.Equal(first, again) {
		t.Fatalf("replay: %v, %v", again, err)
	}
	for name, at := range map[string]time.Time{"changed": sent.Add(-time.Second), "future": sent.Add(time.Hour), "expired": sent.Add(-2 * time.Hour)} {
		if _, err := c.CreateRefund(as(t, "alice"), refund(k, at)); code(err) != codes.InvalidArgument {
			t.Errorf("%s first_sent: %v, want INVALID_ARGUMENT", name, err)
		}
	}
	if n := executions(k); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
	// The metadata key stands in for an unset idempotency_key.
	mk := uuid.NewString()
	ctx := metadata.AppendToOutgoingContext(as(t, "alice"), grpcref.MetadataKey, mk)
	req := &pb.CreateRefundRequest{Parent: "accounts/a1", Payment: &pb.Payment{Amount: 5, Currency: "usd"}}
	a, err := c.CreateRefund(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := c.CreateRefund(ctx, req); err != nil || !proto.Equal(a, b) || executions(mk) != 1 {
		t.Fatalf("metadata key replay: %v, %v, %d executions", b, err, executions(mk))
	}
}

func TestDeclineKeptTransientReleased(t *testing.T) {
	conn, executions := serve(t, grpcref.Options{})
	c := pb.NewPaymentServiceClient(conn)
	for _, tc := range []struct {
		fail string
		want codes.Code
		runs int64
	}{{"decline", codes.FailedPrecondition, 1}, {"transient", codes.Unavailable, 2}} {
		k := uuid.NewString()
		req := payment(k, 1000)
		req.Knobs = &pb.Knobs{Fail: tc.fail}
		for range 2 {
			if _, err := c.CreatePayment(as(t, "alice"), req); code(err) != tc.want {
				t.Fatalf("%s: %v, want %s", tc.fail, err, tc.want)
			}
		}
		if n := executions(k); n != tc.runs {
			t.Errorf("%s twice: %d executions, want %d", tc.fail, n, tc.runs)
		}
	}
}

func TestDefects(t *testing.T) {
	if _, err := grpcref.New(grpcref.Options{Defects: []reference.Defect{reference.ReplayJoinsHeaders}}); err == nil {
		t.Fatal("a defect without a gRPC form was accepted")
	}
	conn, executions := serve(t, grpcref.Options{Defects: []reference.Defect{reference.NoFingerprint, reference.NoUserScope}})
	c := pb.NewPaymentServiceClient(conn)
	k := uuid.NewString()
	first, err := c.CreatePayment(as(t, "alice"), payment(k, 1000))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.CreatePayment(as(t, "alice"), payment(k, 1001)); err != nil || !proto.Equal(got, first) {
		t.Fatalf("no-fingerprint: %v, %v; want the stale replay", got, err)
	}
	if got, err := c.CreatePayment(as(t, "bob"), payment(k, 1000)); err != nil || !proto.Equal(got, first) {
		t.Fatalf("no-user-scope: %v, %v; want alice's payment", got, err)
	}
	if n := executions(k); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
}

// TestReplayMetadata: an answer names its payment in header metadata, a
// replay repeats it and adds the replayed trailer; with
// replay-drops-headers the replay loses the name.
func TestReplayMetadata(t *testing.T) {
	for _, drops := range []bool{false, true} {
		var o grpcref.Options
		if drops {
			o.Defects = []reference.Defect{reference.ReplayDropsHeaders}
		}
		conn, _ := serve(t, o)
		c := pb.NewPaymentServiceClient(conn)
		k := uuid.NewString()
		var h1, t1, h2, t2 metadata.MD
		first, err := c.CreatePayment(as(t, "alice"), payment(k, 1000), grpc.Header(&h1), grpc.Trailer(&t1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreatePayment(as(t, "alice"), payment(k, 1000), grpc.Header(&h2), grpc.Trailer(&t2)); err != nil {
			t.Fatal(err)
		}
		name := first.GetName()
		if got := h1.Get(grpcref.ResourceHeader); len(got) != 1 || got[0] != name || len(t1.Get(grpcref.ReplayedTrailer)) != 0 {
			t.Errorf("first answer: header %v, trailer %v; want %s: %s and no replay marker", h1, t1, grpcref.ResourceHeader, name)
		}
		want := []string{name}
		if drops {
			want = nil
		}
		if got := h2.Get(grpcref.ResourceHeader); !slices.Equal(got, want) || !slices.Equal(t2.Get(grpcref.ReplayedTrailer), []string{"true"}) {
			t.Errorf("replay (drops %v): header %v, trailer %v; want %s: %v and %s: true", drops, h2, t2, grpcref.ResourceHeader, want, grpcref.ReplayedTrailer)
		}
	}
}

// TestFirstSentIgnored: with first-sent-ignored an expired or future
// first_sent executes, and a changed one replays.
func TestFirstSentIgnored(t *testing.T) {
	conn, executions := serve(t, grpcref.Options{TTL: time.Hour, Defects: []reference.Defect{reference.FirstSentIgnored}})
	c := pb.NewPaymentServiceClient(conn)
	now := time.Now()
	for name, at := range map[string]time.Time{"future": now.Add(time.Hour), "expired": now.Add(-2 * time.Hour)} {
		k := uuid.NewString()
		if _, err := c.CreateRefund(as(t, "alice"), refund(k, at)); err != nil || executions(k) != 1 {
			t.Errorf("%s first_sent: %v, %d executions; want it executed", name, err, executions(k))
		}
	}
	k := uuid.NewString()
	first, err := c.CreateRefund(as(t, "alice"), refund(k, now))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := c.CreateRefund(as(t, "alice"), refund(k, now.Add(-time.Second))); err != nil || !proto.Equal(first, again) || executions(k) != 1 {
		t.Fatalf("changed first_sent: %v, %v; want the replay", again, err)
	}
}

func TestNoInflightLockBurst(t *testing.T) {
	conn, executions := serve(t, grpcref.Options{Defects: []reference.Defect{reference.NoInflightLock}})
	c := pb.NewPaymentServiceClient(conn)
	k := uuid.NewString()
	req := payment(k, 1000)
	req.Knobs = &pb.Knobs{DelayMs: 200}
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 4 {
		wg.Go(func() {
			if _, err := c.CreatePayment(as(t, "alice"), req); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := executions(k); n < 2 || failed.Load() != 0 {
		t.Fatalf("no-inflight-lock: %d executions, %d errors; want several executions", n, failed.Load())
	}
}

func TestReflection(t *testing.T) {
	conn, _ := serve(t, grpcref.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := rpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	_ = st.CloseSend()
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{"idemcheck.reference.v1.PaymentService", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("reflection lists %v, not %s", names, want)
		}
	}
}

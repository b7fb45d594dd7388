package grpcref

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// MetadataKey is the metadata a call may carry its key in when its
// message's key field is empty (the Nebius SDK's convention).
const MetadataKey = "x-idempotency-key"

// MaxKeyLen is AIP-155's and AEP-155's limit: "restricted to 36 ASCII
// characters".
const MaxKeyLen = 36

// firstSentSkew is how far in the future an AEP-155 first_sent may lie
// before it is rejected: a client clock a little ahead is not a future key.
const firstSentSkew = time.Minute

// ReplayedTrailer is the trailer metadata marking a replayed answer
// ("true"), as the HTTP reference's Idempotent-Replayed header.
const ReplayedTrailer = "idempotent-replayed"

// ResourceHeader is the header metadata naming the payment an answer
// created, as the HTTP reference's Location: a replay repeats it.
const ResourceHeader = "x-resource-name"

// maxDelay bounds the delay_ms knob, as the HTTP reference's.
const maxDelay = 60 * time.Second

// maxPad bounds the pad_bytes knob: twice gRPC's default 4 MiB receive
// limit, so a client's limit can be shown, not the service's.
const maxPad = 8 << 20

// truncatedBody is where the replay-truncates-body defect cuts a stored
// answer, as the HTTP reference's (a 64 KiB column).
const truncatedBody = 64 << 10

// Options configures the service. Zero values pick the defaults.
type Options struct {
	Store      reference.Store // nil: a new memory store, closed by Close
	TTL, Lease time.Duration   // 0: reference.DefaultTTL, DefaultLease
	// Defects are switched on; each must be one Supports reports.
	Defects []reference.Defect
	// Executing, when set, counts each execution under its key (a refund
	// or a payment); the returned func marks its end. The HTTP reference's
	// effects oracle (demo.App.Executing) counts them beside its own.
	Executing func(key string, refund bool) (done func())
	// VolatileFields are request fields, as protojson pointers
	// (/payment/description), left out of the fingerprint: a retry that
	// changes only them replays (a profile's volatile_fields).
	VolatileFields []string
	// Events, when set, emits a payment.created (refund.created) event per
	// execution into the store's outbox (Store must keep one:
	// reference.EventStore), in the step that stores the outcome. The
	// service runs no relay: the HTTP reference's on the same store
	// (demo.Options.Events) publishes the outbox, as idemcheck serve
	// --events runs them.
	Events bool
}

// supported are the defects with a gRPC form. Of the event defects,
// relay-republish is the relay's (the HTTP reference's, which publishes
// this service's outbox too); event-outside-tx shows only where an
// execution rolls back with its record (the HTTP reference's ledger on
// PostgreSQL), and this service's executions never roll back.
var supported = []reference.Defect{
	reference.NoFingerprint, reference.NoInflightLock, reference.NoUserScope, reference.NoEndpointScope,
	reference.MissingKeyPassthrough, reference.NoCache4xx, reference.Cache5xx, reference.FirstSentIgnored,
	reference.ReplayDropsHeaders, reference.ReplayTruncatesBody, reference.FailureWedgesKey, reference.LeaseNeverExpires,
	reference.EventOnReplay,
}

// Supports reports whether d has a gRPC form in this service.
func Supports(d reference.Defect) bool { return slices.Contains(supported, d) }

// Service implements paymentsv1.PaymentServiceServer.
type Service struct {
	paymentsv1.UnimplementedPaymentServiceServer
	store      reference.Store
	ownsStore  bool
	ttl, lease time.Duration
	defects    map[reference.Defect]bool
	executing  func(string, bool) func()
	// volatile are the request fields left out of the fingerprint.
	volatile []string
	// wedged are the scopes the failure-wedges-key defect left in flight
	// for ever.
	wedged sync.Map
	outbox reference.EventStore // nil: no events
}

// New builds the service; the error names a defect without a gRPC form.
func New(o Options) (*Service, error) {
	s := &Service{store: o.Store, ttl: o.TTL, lease: o.Lease, defects: map[reference.Defect]bool{}, executing: o.Executing,
		volatile: o.VolatileFields}
	for _, d := range o.Defects {
		if !Supports(d) {
			return nil, fmt.Errorf("grpcref: defect %q has no gRPC form (supported: %s)", d, supportedNames())
		}
		if d.NeedsEvents() && !o.Events {
			return nil, fmt.Errorf("grpcref: defect %q needs Events", d)
		}
		s.defects[d] = true
	}
	if s.ttl <= 0 {
		s.ttl = reference.DefaultTTL
	}
	if s.lease <= 0 {
		s.lease = reference.DefaultLease
	}
	if s.defects[reference.LeaseNeverExpires] {
		s.lease = s.ttl // a dead call's claim blocks its key until the TTL
	}
	if s.executing == nil {
		s.executing = func(string, bool) func() { return func() {} }
	}
	if s.store == nil {
		s.store, s.ownsStore = memstore.New(), true
	}
	if o.Events {
		es, ok := s.store.(reference.EventStore)
		if !ok {
			s.Close()
			return nil, errors.New("grpcref: events need a store with an outbox (memory, postgres, redis)")
		}
		s.outbox = es
	}
	return s, nil
}

func supportedNames() string {
	names := make([]string, len(supported))
	for i, d := range supported {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}

// Register serves the service and server reflection (v1 and v1alpha) on g.
func (s *Service) Register(g *grpc.Server) {
	paymentsv1.RegisterPaymentServiceServer(g, s)
	reflection.Register(g)
}

// Close releases what New created.
func (s *Service) Close() error {
	if s.ownsStore {
		return s.store.Close()
	}
	return nil
}

// CreatePayment implements AIP-155: the key is request_id.
func (s *Service) CreatePayment(ctx context.Context, req *paymentsv1.CreatePaymentRequest) (*paymentsv1.Payment, error) {
	if err := validate(req.GetParent(), req.GetPayment(), req.GetKnobs()); err != nil {
		return nil, err
	}
	key, err := keyOf(ctx, req.GetRequestId(), "request_id")
	if err != nil {
		return nil, err
	}
	keyless := proto.CloneOf(req)
	keyless.RequestId = ""
	return s.idempotent(ctx, paymentsv1.PaymentService_CreatePayment_FullMethodName, key, keyless, false,
		func() (*paymentsv1.Payment, error) {
			return execute(req.GetParent()+"/payments/", req.GetPayment(), req.GetKnobs())
		})
}

// CreateRefund implements AEP-155: the key is idempotency_key.key, its
// first_sent must be neither in the future nor older than the TTL, and a
// reused key with another first_sent is another request (INVALID_ARGUMENT,
// as a changed message): first_sent stays in the fingerprint. With the
// first-sent-ignored defect first_sent is neither checked nor
// fingerprinted.
func (s *Service) CreateRefund(ctx context.Context, req *paymentsv1.CreateRefundRequest) (*paymentsv1.Payment, error) {
	if err := validate(req.GetParent(), req.GetPayment(), req.GetKnobs()); err != nil {
		return nil, err
	}
	ik := req.GetIdempotencyKey()
	if ik != nil && !s.defects[reference.FirstSentIgnored] {
		if err := s.checkFirstSent(ik); err != nil {
			return nil, err
		}
	}
	key, err := keyOf(ctx, ik.GetKey(), "idempotency_key.key")
	if err != nil {
		return nil, err
	}
	keyless := proto.CloneOf(req)
	if keyless.IdempotencyKey != nil {
		keyless.IdempotencyKey.Key = ""
		if s.defects[reference.FirstSentIgnored] {
			keyless.IdempotencyKey.FirstSent = nil
		}
	}
	return s.idempotent(ctx, paymentsv1.PaymentService_CreateRefund_FullMethodName, key, keyless, true,
		func() (*paymentsv1.Payment, error) {
			return execute(req.GetParent()+"/refunds/", req.GetPayment(), req.GetKnobs())
		})
}

// checkFirstSent applies AEP-155: "API servers must reject requests with
// expired keys, and must reject requests with keys that are in the future."
func (s *Service) checkFirstSent(ik *paymentsv1.IdempotencyKey) error {
	if ik.GetFirstSent() == nil {
		return status.Error(codes.InvalidArgument, "idempotency_key.first_sent is required")
	}
	if err := ik.GetFirstSent().CheckValid(); err != nil {
		return status.Errorf(codes.InvalidArgument, "idempotency_key.first_sent: %v", err)
	}
	sent, now := ik.GetFirstSent().AsTime(), time.Now()
	switch {
	case sent.After(now.Add(firstSentSkew)):
		return status.Errorf(codes.InvalidArgument, "idempotency_key.first_sent %s is in the future", sent.Format(time.RFC3339))
	case now.Sub(sent) > s.ttl:
		return status.Errorf(codes.InvalidArgument, "idempotency_key.first_sent %s is expired (keys are honoured for %s)", sent.Format(time.RFC3339), s.ttl)
	}
	return nil
}

// keyOf is the call's key: the message's field, else the metadata key;
// "" when neither is set. A key longer than 36 characters or not printable
// ASCII is refused.
func keyOf(ctx context.Context, field, name string) (string, error) {
	key := field
	if key == "" {
		md, _ := metadata.FromIncomingContext(ctx)
		switch vs := md.Get(MetadataKey); len(vs) {
		case 0:
		case 1:
			key, name = vs[0], MetadataKey+" metadata"
		default:
			return "", status.Errorf(codes.InvalidArgument, "%s metadata: sent %d times, want one key", MetadataKey, len(vs))
		}
	}
	if len(key) > MaxKeyLen {
		return "", status.Errorf(codes.InvalidArgument, "%s: %d characters, at most %d", name, len(key), MaxKeyLen)
	}
	for _, c := range []byte(key) {
		if c <= ' ' || c > '~' {
			return "", status.Errorf(codes.InvalidArgument, "%s: printable ASCII only", name)
		}
	}
	return key, nil
}

// idempotent runs exec at most once per key within the TTL: the claim,
// the replay of a completed call, the refusal of a changed message or of
// a call while the first runs.
func (s *Service) idempotent(ctx context.Context, method, key string, keyless proto.Message, refund bool,
	exec func() (*paymentsv1.Payment, error)) (*paymentsv1.Payment, error) {
	principal := bearer(ctx)
	if principal == "" {
		return nil, status.Error(codes.Unauthenticated, `authorization metadata: want "Bearer <user>"`)
	}
	if key == "" {
		if s.defects[reference.MissingKeyPassthrough] {
			return s.unrecorded(ctx, key, refund, exec)
		}
		return nil, status.Errorf(codes.InvalidArgument, "an idempotency key is required (the message's key field or %s metadata)", MetadataKey)
	}
	for _, f := range s.volatile {
		clearField(keyless.ProtoReflect(), f)
	}
	js, err := protojson.Marshal(keyless)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encoding the request: %v", err)
	}
	fp := reference.FingerprintJSON(js)
	scope := reference.Scope{Principal: principal, Method: "RPC", Path: method, Key: key}
	if s.defects[reference.NoUserScope] {
		scope.Principal = ""
	}
	if s.defects[reference.NoEndpointScope] {
		scope.Path = ""
	}
	if _, ok := s.wedged.Load(scope); ok {
		return nil, status.Errorf(codes.Aborted, "a call with key %q is in progress; retry it later", key)
	}
	claim, err := s.store.Claim(ctx, reference.ClaimRequest{Scope: scope, Fingerprint: fp, Lease: s.lease, TTL: s.ttl})
	if err != nil {
		return nil, storeError(err)
	}
	if claim.Outcome == reference.Existing {
		rec := claim.Record
		switch {
		case rec.Fingerprint != fp && !s.defects[reference.NoFingerprint]:
			return nil, status.Errorf(codes.InvalidArgument, "key %q was used with another request message; send a new key", key)
		case rec.State == reference.InFlight && s.defects[reference.NoInflightLock]:
			return s.unrecorded(ctx, key, refund, exec) // the defect: treated as absent, nothing stored
		case rec.State == reference.InFlight:
			return nil, status.Errorf(codes.Aborted, "a call with key %q is in progress; retry it later", key)
		}
		p, err := replay(rec.Response)
		s.annotate(ctx, p, true)
		s.onReplay(context.WithoutCancel(ctx), key, refund, p)
		return p, err
	}
	p, err := s.run(key, refund, exec)
	// The outcome is stored even when the caller went away: its retry
	// must find it.
	sctx := context.WithoutCancel(ctx)
	var resp reference.Response
	events := s.eventOf(key, refund, p)
	if err == nil {
		body, merr := proto.MarshalOptions{Deterministic: true}.Marshal(p)
		if merr != nil {
			_ = s.store.Release(sctx, scope, claim.Token)
			return nil, status.Errorf(codes.Internal, "encoding the response: %v", merr)
		}
		if s.defects[reference.ReplayTruncatesBody] && len(body) > truncatedBody {
			body = body[:truncatedBody]
		}
		resp = reference.Response{Status: int(codes.OK), Body: body}
	} else if errors.Is(err, errCrashed) && s.defects[reference.FailureWedgesKey] {
		s.wedged.Store(scope, true) // the defect: never released, never completed
		return nil, err
	} else if st := status.Convert(err); s.keeps(st.Code()) {
		resp = reference.Response{Status: int(st.Code()), Body: []byte(st.Message())}
	} else {
		_ = s.store.Release(sctx, scope, claim.Token)
		return nil, err
	}
	if cerr := s.complete(sctx, scope, claim.Token, resp, events); cerr != nil && !errors.Is(cerr, reference.ErrNotOwner) {
		return nil, storeError(cerr)
	}
	s.annotate(ctx, p, false)
	return p, err
}

// annotate sends the answer's metadata: the created payment's name
// (ResourceHeader), and on a replay the ReplayedTrailer. With the
// replay-drops-headers defect a replay loses the name.
func (s *Service) annotate(ctx context.Context, p *paymentsv1.Payment, replayed bool) {
	if p != nil && !(replayed && s.defects[reference.ReplayDropsHeaders]) {
		_ = grpc.SetHeader(ctx, metadata.Pairs(ResourceHeader, p.GetName())) // no stream (a direct call): nothing to send
	}
	if replayed {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(ReplayedTrailer, "true"))
	}
}

// keeps reports whether an error outcome is stored and replayed: a
// business refusal (FAILED_PRECONDITION, a declined card) is an outcome,
// a transient failure is not.
func (s *Service) keeps(c codes.Code) bool {
	switch c {
	case codes.FailedPrecondition:
		return !s.defects[reference.NoCache4xx]
	case codes.Unavailable, codes.Internal, codes.DeadlineExceeded:
		return s.defects[reference.Cache5xx]
	}
	return false
}

// run executes exec, counted under key. A payment once started is
// completed though the caller goes away (its deadline, a cut
// connection), as a provider's charge is: its outcome is stored for the
// retry (lost/dropped-response-retry), and an execution the oracle
// counts is one that charged.
func (s *Service) run(key string, refund bool, exec func() (*paymentsv1.Payment, error)) (p *paymentsv1.Payment, err error) {
	defer s.executing(key, refund)()
	// A panic is the crash knob's (or a bug's): answered INTERNAL, the
	// claim released like any unkept failure, as a recovery interceptor
	// and a deferred release do in a real service (grpc-go itself does
	// not recover: the process would die).
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, crashed{r}
		}
	}()
	return exec()
}

// errCrashed is what a recovered panic's error is.
var errCrashed = errors.New("the handler crashed")

// crashed is a recovered panic, answered INTERNAL.
type crashed struct{ v any }

func (c crashed) Error() string     { return fmt.Sprintf("%v: %v", errCrashed, c.v) }
func (c crashed) Is(err error) bool { return err == errCrashed }
func (c crashed) GRPCStatus() *status.Status {
	return status.New(codes.Internal, c.Error())
}

// clearField clears the field at path (/payment/description: field names,
// protojson's or the proto's) in m, where every message on the way is set.
func clearField(m protoreflect.Message, path string) {
	names := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, n := range names {
		fd := m.Descriptor().Fields().ByJSONName(n)
		if fd == nil {
			fd = m.Descriptor().Fields().ByName(protoreflect.Name(n))
		}
		if fd == nil || !m.Has(fd) {
			return
		}
		if i == len(names)-1 {
			m.Clear(fd)
			return
		}
		if fd.Message() == nil || fd.IsList() || fd.IsMap() {
			return
		}
		m = m.Get(fd).Message()
	}
}

// unrecorded runs exec for a call that stores no outcome; its events go
// to the outbox alone.
func (s *Service) unrecorded(ctx context.Context, key string, refund bool, exec func() (*paymentsv1.Payment, error)) (*paymentsv1.Payment, error) {
	p, err := s.run(key, refund, exec)
	s.appendEvents(context.WithoutCancel(ctx), s.eventOf(key, refund, p))
	return p, err
}

// replay answers with a stored outcome.
func replay(r reference.Response) (*paymentsv1.Payment, error) {
	if codes.Code(r.Status) != codes.OK {
		return nil, status.Error(codes.Code(r.Status), string(r.Body))
	}
	p := new(paymentsv1.Payment)
	if err := proto.Unmarshal(r.Body, p); err != nil {
		return nil, status.Errorf(codes.DataLoss, "the stored response does not decode: %v", err)
	}
	return p, nil
}

func storeError(err error) error {
	if errors.Is(err, reference.ErrUnavailable) {
		return status.Errorf(codes.Unavailable, "idempotency store: %v", err)
	}
	return status.Errorf(codes.Internal, "idempotency store: %v", err)
}

// bearer is the principal: the user named by "authorization: Bearer <user>".
func bearer(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	vs := md.Get("authorization")
	if len(vs) != 1 {
		return ""
	}
	user, ok := strings.CutPrefix(vs[0], "Bearer ")
	if !ok || user == "" || strings.ContainsAny(user, " \t") {
		return ""
	}
	return user
}

// validate refuses a malformed request before any idempotency work: an
// invalid call is never stored.
func validate(parent string, p *paymentsv1.Payment, k *paymentsv1.Knobs) error {
	switch {
	case !strings.HasPrefix(parent, "accounts/") || len(parent) == len("accounts/"):
		return status.Error(codes.InvalidArgument, "parent: want accounts/{account}")
	case p.GetAmount() <= 0:
		return status.Error(codes.InvalidArgument, "payment.amount must be a positive integer")
	case len(p.GetCurrency()) != 3 || strings.Trim(strings.ToLower(p.GetCurrency()), "abcdefghijklmnopqrstuvwxyz") != "":
		return status.Error(codes.InvalidArgument, "payment.currency must be a 3-letter code")
	case k.GetDelayMs() < 0 || k.GetDelayMs() > maxDelay.Milliseconds():
		return status.Error(codes.InvalidArgument, "knobs.delay_ms must be between 0 and 60000")
	case k.GetFail() != "" && k.GetFail() != "decline" && k.GetFail() != "transient" && k.GetFail() != "crash":
		return status.Error(codes.InvalidArgument, `knobs.fail must be "decline", "transient" or "crash"`)
	case k.GetPadBytes() < 0 || k.GetPadBytes() > maxPad:
		return status.Errorf(codes.InvalidArgument, "knobs.pad_bytes must be between 0 and %d", maxPad)
	}
	return nil
}

// execute is the payment itself: the knobs' delay and failure, then a new
// resource named under prefix.
func execute(prefix string, p *paymentsv1.Payment, k *paymentsv1.Knobs) (*paymentsv1.Payment, error) {
	time.Sleep(time.Duration(k.GetDelayMs()) * time.Millisecond)
	switch k.GetFail() {
	case "decline":
		return nil, status.Error(codes.FailedPrecondition, "card declined; nothing was charged")
	case "transient":
		return nil, status.Error(codes.Unavailable, "a transient failure; retry with the same key")
	case "crash":
		panic("grpcref: the handler crashed (knobs.fail: crash)")
	}
	desc := p.GetDescription()
	if pad := int(k.GetPadBytes()); len(desc) < pad {
		desc += strings.Repeat("x", pad-len(desc))
	}
	var id [12]byte
	_, _ = rand.Read(id[:]) // never fails (Go 1.24+)
	return &paymentsv1.Payment{
		Name:        prefix + hex.EncodeToString(id[:]),
		Amount:      p.GetAmount(),
		Currency:    strings.ToLower(p.GetCurrency()),
		Description: desc,
		CreateTime:  timestamppb.Now(),
	}, nil
}

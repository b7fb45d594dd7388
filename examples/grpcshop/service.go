package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/idemcheck/idemcheck/examples/grpcshop/shopv1"
)

// errorDomain names this service in the google.rpc.ErrorInfo of its errors.
const errorDomain = "checkout.shop.example"

// prices are the catalog's unit prices in cents, EUR.
var prices = map[string]int64{"beans-1kg": 2450, "milk-jug": 1290, "grinder": 18900}

// checkout serves shop.v1.CheckoutService.
type checkout struct {
	shopv1.UnimplementedCheckoutServiceServer
	db       *db
	provider *cardProvider
	ttl      time.Duration // how long a key's outcome is kept, from completion
	lease    time.Duration // how long a claim holds its key while it runs
	skew     time.Duration // how far in the future a first_sent may be (clocks differ)
	defect   defect

	// recent is the replays-other-response build's reply cache.
	mu     sync.Mutex
	recent map[string][]byte
}

// CreateOrder prices the order, charges the card and records the order,
// once per request_id (AIP-155; without one, every call runs).
func (c *checkout) CreateOrder(ctx context.Context, req *shopv1.CreateOrderRequest) (*shopv1.Order, error) {
	who := customerOf(ctx)
	d := req.GetOrder()
	price, ok := prices[d.GetSku()]
	switch {
	case !ok:
		return nil, invalid("order.sku", fmt.Sprintf("no product %q", d.GetSku()))
	case d.GetQuantity() < 1 || d.GetQuantity() > 100:
		return nil, invalid("order.quantity", "must be between 1 and 100")
	case d.GetCard() == "":
		return nil, invalid("order.card", "a card token is required")
	case d.GetPaymentReference() == "" || len(d.GetPaymentReference()) > 64:
		return nil, invalid("order.payment_reference", "1 to 64 characters are required")
	}
	place := func(ctx context.Context) (proto.Message, func(pgx.Tx) error, error) {
		return c.placeOrder(ctx, who, req.GetRequestId(), d, price)
	}
	if req.GetRequestId() == "" {
		m, rows, err := place(ctx)
		if err == nil && rows != nil {
			err = pgx.BeginFunc(ctx, c.db.pool, rows)
		}
		return asOrder(m, err)
	}
	if err := checkKey("request_id", req.GetRequestId()); err != nil {
		return nil, err
	}
	s := slot{customer: who, method: "CreateOrder", key: req.GetRequestId(), digest: c.orderDigest(req)}
	return asOrder(c.once(ctx, s, new(shopv1.Order), place))
}

// CreateRefund refunds a provider payment, once per idempotency_key
// (AEP-155; without one, every call runs).
func (c *checkout) CreateRefund(ctx context.Context, req *shopv1.CreateRefundRequest) (*shopv1.Refund, error) {
	who := customerOf(ctx)
	switch {
	case req.GetPayment() == "":
		return nil, invalid("payment", "the provider's payment id is required")
	case req.GetAmountCents() < 1:
		return nil, invalid("amount_cents", "must be positive")
	case req.GetRefundReference() == "" || len(req.GetRefundReference()) > 64:
		return nil, invalid("refund_reference", "1 to 64 characters are required")
	}
	refund := func(ctx context.Context) (proto.Message, func(pgx.Tx) error, error) {
		return c.refund(ctx, who, req.GetIdempotencyKey().GetKey(), req)
	}
	ik := req.GetIdempotencyKey()
	if ik == nil {
		m, rows, err := refund(ctx)
		if err == nil && rows != nil {
			err = pgx.BeginFunc(ctx, c.db.pool, rows)
		}
		return asRefund(m, err)
	}
	if err := checkKey("idempotency_key.key", ik.GetKey()); err != nil {
		return nil, err
	}
	s := slot{customer: who, method: "CreateRefund", key: ik.GetKey(), digest: digest(req, func(m *shopv1.CreateRefundRequest) { m.IdempotencyKey = nil })}
	if c.defect != firstSentIgnored {
		at, err := c.firstSent(ik)
		if err != nil {
			return nil, err
		}
		s.firstSent = &at
	}
	return asRefund(c.once(ctx, s, new(shopv1.Refund), refund))
}

// firstSent checks AEP-155's first_sent: set, not in the future (beyond
// clock skew), not older than the key's retention.
func (c *checkout) firstSent(ik *shopv1.IdempotencyKey) (time.Time, error) {
	if ik.GetFirstSent() == nil {
		return time.Time{}, invalid("idempotency_key.first_sent", "is required")
	}
	if err := ik.GetFirstSent().CheckValid(); err != nil {
		return time.Time{}, invalid("idempotency_key.first_sent", err.Error())
	}
	at, now := ik.GetFirstSent().AsTime(), time.Now()
	switch {
	case at.After(now.Add(c.skew)):
		return at, invalid("idempotency_key.first_sent", "is in the future")
	case now.Sub(at) > c.ttl:
		return at, invalid("idempotency_key.first_sent", fmt.Sprintf("is older than the key's retention (%s): send the request under a new key", c.ttl))
	}
	return at, nil
}

// once runs work at most once for s's key: the first request claims the
// key and runs it, a retry gets the kept outcome, a retry while it runs
// ABORTED, another request under the key INVALID_ARGUMENT.
func (c *checkout) once(ctx context.Context, s slot, reply proto.Message, work func(context.Context) (proto.Message, func(pgx.Tx) error, error)) (proto.Message, error) {
	if c.defect == noCallerScope {
		s.customer = ""
	}
	// A claim whose row vanishes before it is read (completed and released
	// in between) is tried again; three times is plenty.
	for range 3 {
		holder := uuid.New()
		claim := c.db.claim
		if c.defect == checkThenInsert {
			claim = c.db.insertFirst
		}
		taken, e, err := claim(ctx, s, holder, c.lease)
		if err != nil {
			return nil, storeErr(ctx, err)
		}
		if taken {
			return c.run(ctx, s, holder, work)
		}
		if e == nil {
			continue
		}
		if c.defect == replaysOtherResponse {
			if r := c.cached(s); r != nil {
				return replay(r, nil, reply)
			}
		}
		switch {
		case string(e.digest) != string(s.digest) && c.defect == executeOnMismatch && e.done:
			return c.amend(ctx, s, work)
		case string(e.digest) != string(s.digest):
			return nil, idemErr(codes.InvalidArgument, "REQUEST_KEY_REUSED", "this key was used with another request; send a new key for a new request")
		case s.firstSent != nil && e.firstSent != nil && !s.firstSent.Equal(*e.firstSent):
			return nil, idemErr(codes.InvalidArgument, "FIRST_SENT_CHANGED", "idempotency_key.first_sent differs from the first request's")
		case !e.done:
			return nil, idemErr(codes.Aborted, "REQUEST_IN_PROGRESS", "a request with this key is in progress; retry later")
		}
		return replay(e.reply, e.failure, reply)
	}
	return nil, status.Error(codes.Aborted, "the key changed hands repeatedly; retry")
}

// run executes work for holder and keeps its outcome: a reply or a refusal
// is the key's for ttl; a failure that is not final (provider
// unavailable or silent) releases the key so that a retry runs again.
// The work goes on though the caller leaves (a deadline, a cut
// connection): a charge once sent is finished and kept for the retry.
func (c *checkout) run(ctx context.Context, s slot, holder uuid.UUID, work func(context.Context) (proto.Message, func(pgx.Tx) error, error)) (proto.Message, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.provider.timeout+10*time.Second)
	defer cancel()
	m, rows, werr := work(ctx)
	reply, failure, keep := outcome(m, werr)
	if !keep {
		if err := c.db.release(ctx, s, holder); err != nil {
			slog.Error("grpcshop: release", "err", err)
		}
		return m, werr
	}
	held, err := c.db.complete(ctx, s, holder, reply, failure, c.ttl, rows)
	switch {
	case err != nil:
		return nil, storeErr(ctx, err)
	case !held:
		slog.Warn("grpcshop: the claim lapsed before the request completed", "method", s.method)
		return nil, status.Error(codes.Aborted, "the request lost its claim on the key; retry")
	}
	c.remember(s, reply)
	return m, werr
}

// amend is the execute-on-mismatch build's: the changed request runs and
// its outcome replaces the key's.
func (c *checkout) amend(ctx context.Context, s slot, work func(context.Context) (proto.Message, func(pgx.Tx) error, error)) (proto.Message, error) {
	m, rows, werr := work(ctx)
	reply, failure, keep := outcome(m, werr)
	if keep {
		if err := c.db.overwrite(ctx, s, reply, failure, c.ttl, rows); err != nil {
			return nil, storeErr(ctx, err)
		}
	}
	return m, werr
}

// outcome is what is kept of a work's result: the reply, or a refusal's
// status; keep is false for a failure that is not final.
func outcome(m proto.Message, err error) (reply, failure []byte, keep bool) {
	if err == nil {
		b, merr := proto.Marshal(m)
		return b, nil, merr == nil
	}
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition {
		return nil, nil, false
	}
	b, merr := proto.Marshal(st.Proto())
	return nil, b, merr == nil
}

// replay rebuilds a kept outcome into reply.
func replay(b, failure []byte, reply proto.Message) (proto.Message, error) {
	if failure != nil {
		st := new(spb.Status)
		if err := proto.Unmarshal(failure, st); err != nil {
			return nil, status.Error(codes.Internal, "a kept outcome does not decode")
		}
		return nil, status.ErrorProto(st)
	}
	if err := proto.Unmarshal(b, reply); err != nil {
		return nil, status.Error(codes.Internal, "a kept outcome does not decode")
	}
	return reply, nil
}

// remember and cached are the replays-other-response build's reply cache:
// a completed reply kept in memory for the next retry, its cache key the
// customer and method — the request's key left out.
func (c *checkout) remember(s slot, reply []byte) {
	if c.defect != replaysOtherResponse || reply == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recent[s.customer+"/"+s.method] = reply
}

func (c *checkout) cached(s slot) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recent[s.customer+"/"+s.method]
}

// placeOrder charges the card and returns the order with the rows to
// write with the key's outcome. A declined card is FAILED_PRECONDITION;
// a provider unavailable UNAVAILABLE, silent DEADLINE_EXCEEDED.
func (c *checkout) placeOrder(ctx context.Context, who, key string, d *shopv1.OrderDraft, price int64) (proto.Message, func(pgx.Tx) error, error) {
	id := newID("ord")
	amount := price * int64(d.GetQuantity())
	a := c.provider.charge(ctx, chargeCall{AmountCents: amount, Currency: "EUR", Card: d.GetCard(), Reference: d.GetPaymentReference(), Description: "order " + id})
	if err := c.db.logCall(ctx, who, "charge", key, d.GetPaymentReference(), amount, a); err != nil {
		slog.Error("grpcshop: log a provider call", "err", err)
	}
	if err := providerErr(a, "CARD_DECLINED", "the card was declined"); err != nil {
		return nil, nil, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	o := &shopv1.Order{
		Name: "customers/" + who + "/orders/" + id, Sku: d.GetSku(), Quantity: d.GetQuantity(), AmountCents: amount, Currency: "EUR",
		PaymentReference: d.GetPaymentReference(), PaymentId: a.id, State: shopv1.OrderState_PAID, CreateTime: timestamppb.New(now),
	}
	return o, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO checkout_orders (order_id, customer, sku, quantity, amount_cents, currency, payment_reference, payment_id, created)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, id, who, o.Sku, o.Quantity, amount, o.Currency, o.PaymentReference, o.PaymentId, now)
		return err
	}, nil
}

// refund asks the provider for the refund and returns it with its row.
func (c *checkout) refund(ctx context.Context, who, key string, req *shopv1.CreateRefundRequest) (proto.Message, func(pgx.Tx) error, error) {
	id := newID("rf")
	a := c.provider.refund(ctx, refundCall{Payment: req.GetPayment(), AmountCents: req.GetAmountCents(), Reason: req.GetReason(), Reference: req.GetRefundReference()})
	if err := c.db.logCall(ctx, who, "refund", key, req.GetRefundReference(), req.GetAmountCents(), a); err != nil {
		slog.Error("grpcshop: log a provider call", "err", err)
	}
	if err := providerErr(a, "REFUND_REFUSED", "the provider refused the refund"); err != nil {
		return nil, nil, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	r := &shopv1.Refund{
		Name: "customers/" + who + "/refunds/" + id, Payment: req.GetPayment(), AmountCents: req.GetAmountCents(), Reason: req.GetReason(),
		RefundReference: req.GetRefundReference(), ProviderRefundId: a.id, CreateTime: timestamppb.New(now),
	}
	return r, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO checkout_refunds (refund_id, customer, payment, amount_cents, reason, refund_reference, provider_refund_id, created)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, id, who, r.Payment, r.AmountCents, r.Reason, r.RefundReference, r.ProviderRefundId, now)
		return err
	}, nil
}

// providerErr is the status of a provider call that did not succeed (nil
// when it did): a refusal FAILED_PRECONDITION with reason.
func providerErr(a providerAnswer, reason, message string) error {
	switch a.verdict {
	case accepted:
		return nil
	case refused:
		return withInfo(status.New(codes.FailedPrecondition, message), reason, map[string]string{"provider_code": a.detail})
	case noAnswer:
		return status.Error(codes.DeadlineExceeded, a.detail)
	}
	return status.Error(codes.Unavailable, a.detail+"; retry with the same key")
}

// orderDigest is what makes two CreateOrder requests the same request.
func (c *checkout) orderDigest(req *shopv1.CreateOrderRequest) []byte {
	if c.defect == partialDigest {
		d := req.GetOrder()
		sum := sha256.Sum256([]byte(d.GetSku() + "\x00" + d.GetCard() + "\x00" + d.GetPaymentReference()))
		return sum[:]
	}
	return digest(req, func(m *shopv1.CreateOrderRequest) { m.RequestId = "" })
}

// digest is the SHA-256 of req's deterministic encoding with its key
// cleared by clear (on a copy).
func digest[M proto.Message](req M, clear func(M)) []byte {
	m := proto.Clone(req).(M)
	clear(m)
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m) // a message that arrived encodes again
	sum := sha256.Sum256(b)
	return sum[:]
}

// checkKey accepts 1 to 36 printable ASCII characters (AIP-155, AEP-155).
func checkKey(field, k string) error {
	if len(k) == 0 || len(k) > 36 {
		return invalid(field, "must be 1 to 36 ASCII characters (a UUID)")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return invalid(field, "must be printable ASCII (a UUID)")
		}
	}
	return nil
}

func invalid(field, why string) error {
	st, err := status.New(codes.InvalidArgument, field+": "+why).WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: why}},
	})
	if err != nil {
		return status.Error(codes.InvalidArgument, field+": "+why)
	}
	return st.Err()
}

func idemErr(code codes.Code, reason, message string) error {
	return withInfo(status.New(code, message), reason, nil)
}

func withInfo(st *status.Status, reason string, md map[string]string) error {
	with, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: errorDomain, Metadata: md})
	if err != nil {
		return st.Err()
	}
	return with.Err()
}

// storeErr is the status of a database error: the caller's own deadline,
// else UNAVAILABLE (nothing was kept: a retry is safe).
func storeErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	slog.Error("grpcshop: database", "err", err)
	return status.Error(codes.Unavailable, "the database is unavailable; retry with the same key")
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

func asOrder(m proto.Message, err error) (*shopv1.Order, error) {
	if err != nil {
		return nil, err
	}
	return m.(*shopv1.Order), nil
}

func asRefund(m proto.Message, err error) (*shopv1.Refund, error) {
	if err != nil {
		return nil, err
	}
	return m.(*shopv1.Refund), nil
}

package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
)

// GRPCClient is the reference client of the reference gRPC
// PaymentService: CreatePayment with AIP-155's request_id, minted once per
// call and re-sent on every retry of it.
type GRPCClient struct {
	Token       string
	Timeout     time.Duration
	MaxAttempts int
	Backoff     time.Duration

	conn    *grpc.ClientConn
	stub    paymentsv1.PaymentServiceClient
	defects map[Defect]bool
	mu      sync.Mutex
	shared  string // the key-in-default-headers defect's one key
}

// NewGRPC dials base (grpc://host:port, plaintext).
func NewGRPC(base, token string, defects ...Defect) (*GRPCClient, error) {
	conn, err := grpc.NewClient(strings.TrimPrefix(base, "grpc://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	c := &GRPCClient{Token: token, Timeout: DefaultTimeout, MaxAttempts: DefaultMaxAttempts, Backoff: DefaultBackoff,
		conn: conn, stub: paymentsv1.NewPaymentServiceClient(conn), defects: map[Defect]bool{}}
	for _, d := range defects {
		c.defects[d] = true
	}
	return c, nil
}

// Close closes the connection.
func (c *GRPCClient) Close() error { return c.conn.Close() }

// CreatePayment makes one logical call and returns the payment's name.
func (c *GRPCClient) CreatePayment(ctx context.Context, ch Charge) (string, error) {
	key := newKey()
	if c.defects[KeyInDefaultHeaders] {
		c.mu.Lock()
		if c.shared == "" {
			c.shared = key
		}
		key = c.shared
		c.mu.Unlock()
	}
	if c.Token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.Token)
	}
	timedOut := false
	var last error
	for attempt := 1; attempt <= c.MaxAttempts; attempt++ {
		if attempt > 1 && c.defects[FreshKeyPerRetry] {
			key = newKey()
		}
		req := &paymentsv1.CreatePaymentRequest{Parent: "accounts/a1", RequestId: key,
			Payment: &paymentsv1.Payment{Amount: ch.Amount, Currency: ch.Currency, Description: ch.Description}}
		if c.defects[BodyRebuiltPerAttempt] {
			req.Payment.Description = time.Now().UTC().Format(time.RFC3339Nano)
		}
		if c.defects[NoKeyOnTimeoutRetry] && timedOut {
			req.RequestId = ""
		}
		actx, cancel := context.WithTimeout(ctx, c.Timeout)
		p, err := c.stub.CreatePayment(actx, req)
		cancel()
		if err == nil {
			return p.GetName(), nil
		}
		last = err
		if ctx.Err() != nil || !c.retryable(status.Code(err)) {
			return "", err
		}
		timedOut = status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded)
		if attempt == c.MaxAttempts {
			break
		}
		if err := sleep(ctx, backoff(c.Backoff, attempt)); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("gave up after %d attempts: %w", c.MaxAttempts, last)
}

// retryable: a status that says nothing ran, it is still running, or the
// answer was lost.
func (c *GRPCClient) retryable(code codes.Code) bool {
	switch code {
	case codes.Unavailable, codes.Aborted, codes.ResourceExhausted, codes.Internal, codes.DeadlineExceeded:
		return true
	case codes.FailedPrecondition:
		return c.defects[Retried422]
	}
	return false
}

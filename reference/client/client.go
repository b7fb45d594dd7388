package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of Client.
const (
	DefaultTimeout     = time.Second
	DefaultMaxAttempts = 5
	DefaultBackoff     = 100 * time.Millisecond
	maxBackoff         = 2 * time.Second
	maxAnswer          = 1 << 20
)

// Client is one shared SDK object: calls may run through it at once.
type Client struct {
	BaseURL string
	Token   string
	// Timeout bounds each attempt; MaxAttempts each call; Backoff is the
	// first wait, doubled after each failure.
	Timeout     time.Duration
	MaxAttempts int
	Backoff     time.Duration
	HTTP        *http.Client

	defects map[Defect]bool
	mu      sync.Mutex
	// headers are sent on every request (the home of the
	// key-in-default-headers defect).
	headers http.Header
}

// New returns a client of the API at base.
func New(base, token string, defects ...Defect) *Client {
	c := &Client{BaseURL: strings.TrimRight(base, "/"), Token: token, Timeout: DefaultTimeout,
		MaxAttempts: DefaultMaxAttempts, Backoff: DefaultBackoff, HTTP: &http.Client{},
		defects: map[Defect]bool{}, headers: http.Header{"User-Agent": {"idemcheck-reference-client/1"}}}
	for _, d := range defects {
		c.defects[d] = true
	}
	return c
}

// StatusError is an answer the client does not retry (or gave up on).
type StatusError struct {
	Status int
	Body   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("the API answered %d: %s", e.Status, strings.TrimSpace(e.Body))
}

// Charge is what CreateCharge asks for.
type Charge struct {
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Description string `json:"description,omitempty"`
}

// rebuilt is the body the body-rebuilt-per-attempt defect sends.
type rebuilt struct {
	Charge
	SentAt string `json:"sent_at"`
}

// CreateCharge makes one logical call, POST /v1/charges, retried under
// one key, and returns the created charge's id.
func (c *Client) CreateCharge(ctx context.Context, ch Charge) (string, error) {
	key := newKey()
	if c.defects[KeyInDefaultHeaders] {
		c.mu.Lock()
		if c.headers.Get("Idempotency-Key") == "" {
			c.headers.Set("Idempotency-Key", sfString(key))
		}
		c.mu.Unlock()
	}
	body, err := json.Marshal(ch) // the snapshot every attempt re-sends
	if err != nil {
		return "", err
	}
	timedOut := false
	var last error
	for attempt := 1; attempt <= c.MaxAttempts; attempt++ {
		if attempt > 1 && c.defects[FreshKeyPerRetry] {
			key = newKey()
		}
		b := body
		if c.defects[BodyRebuiltPerAttempt] {
			b, _ = json.Marshal(rebuilt{ch, time.Now().UTC().Format(time.RFC3339Nano)})
		}
		omitKey := c.defects[KeyInDefaultHeaders] || c.defects[NoKeyOnTimeoutRetry] && timedOut
		id, wait, err := c.attempt(ctx, b, key, omitKey)
		if err == nil {
			return id, nil
		}
		last = err
		if wait < 0 || ctx.Err() != nil {
			return "", err
		}
		timedOut = errors.Is(err, context.DeadlineExceeded)
		if d := backoff(c.Backoff, attempt); wait < d {
			wait = d
		}
		if attempt == c.MaxAttempts {
			break
		}
		if err := sleep(ctx, wait); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("gave up after %d attempts: %w", c.MaxAttempts, last)
}

// attempt sends one request. A wait < 0 means the error is final; else
// the call may be retried after wait (the answer's Retry-After, 0 when
// none).
func (c *Client) attempt(ctx context.Context, body []byte, key string, omitKey bool) (id string, wait time.Duration, err error) {
	actx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.BaseURL+"/v1/charges", bytes.NewReader(body))
	if err != nil {
		return "", -1, err
	}
	c.mu.Lock()
	for k, v := range c.headers {
		req.Header[k] = append([]string(nil), v...)
	}
	c.mu.Unlock()
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if !omitKey {
		req.Header.Set("Idempotency-Key", sfString(key))
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return "", 0, err // a lost answer or a timeout: the call may have run
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return "", 0, err
	}
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		var out struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || out.ID == "" {
			return "", -1, fmt.Errorf("the API answered %d without an id", s)
		}
		return out.ID, 0, nil
	case c.retryable(s):
		return "", c.retryAfter(resp), &StatusError{Status: s, Body: string(raw)}
	default:
		return "", -1, &StatusError{Status: s, Body: string(raw)}
	}
}

// retryable: an answer that says nothing ran or it is still running.
func (c *Client) retryable(status int) bool {
	switch status {
	case http.StatusConflict, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case http.StatusUnprocessableEntity:
		return c.defects[Retried422]
	}
	return false
}

func (c *Client) retryAfter(resp *http.Response) time.Duration {
	if c.defects[IgnoredRetryAfter] {
		return 0
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// backoff is the wait after the attempt-th failure: first doubled each
// time, capped.
func backoff(first time.Duration, attempt int) time.Duration {
	d := first << (attempt - 1)
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	return d
}

// sleep waits d, or until ctx ends (its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// newKey is a random (version 4) UUID.
func newKey() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // never fails (Go 1.24+)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}

// sfString writes a key made of printable ASCII as an RFC 8941 sf-string.
func sfString(key string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
}

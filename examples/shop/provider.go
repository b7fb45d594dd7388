package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// provider is the payment provider's HTTP API: one charge call,
// POST {PROVIDER_URL}/v1/payments.
type provider struct {
	url     string
	timeout time.Duration
	client  *http.Client
}

func newProvider(baseURL string, timeout time.Duration) *provider {
	return &provider{
		url:     strings.TrimRight(baseURL, "/") + "/v1/payments",
		timeout: timeout,
		client: &http.Client{Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   32,
			IdleConnTimeout:       30 * time.Second,
		}},
	}
}

// charge is what the shop asks the provider for.
type charge struct {
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Card        string `json:"card"`
	Reference   string `json:"reference"`
	OrderID     string `json:"order_id"`
	Description string `json:"description"`
}

// outcome is the provider's answer to a charge.
type outcome int

const (
	paid     outcome = iota // 2xx: the card was charged
	declined                // 402: a business outcome, final
	failed                  // 5xx, no answer in time, unreachable: nothing is known to be final
)

// result is a charge's outcome with what the shop keeps of it.
type result struct {
	outcome   outcome
	paymentID string // paid
	reason    string // declined, failed
	timedOut  bool   // failed: no answer within the provider timeout
}

// charge calls the provider once, bounded by the provider timeout. The
// order id doubles as the provider's idempotency key, so the provider can
// drop its own network retries of this very attempt.
func (p *provider) charge(ctx context.Context, c charge) result {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	body, err := json.Marshal(c)
	if err != nil {
		return result{outcome: failed, reason: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return result{outcome: failed, reason: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", `"`+c.OrderID+`"`)
	resp, err := p.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return result{outcome: failed, reason: fmt.Sprintf("no answer within %s", p.timeout), timedOut: true}
		}
		return result{outcome: failed, reason: "unreachable"}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return result{outcome: failed, reason: "answer cut short"}
	}
	var answer struct {
		ID      string `json:"id"`
		Error   any    `json:"error"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &answer) // a body we cannot read leaves the fields empty
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return result{outcome: paid, paymentID: answer.ID}
	case resp.StatusCode == http.StatusPaymentRequired:
		reason := answer.Message
		if reason == "" && answer.Error != nil {
			reason = fmt.Sprint(answer.Error)
		}
		if reason == "" {
			reason = "the card was declined"
		}
		return result{outcome: declined, reason: reason}
	}
	// A 5xx, or a 4xx other than a decline (a request of ours the provider
	// refused): not a final outcome of this order.
	return result{outcome: failed, reason: fmt.Sprintf("provider answered %d", resp.StatusCode)}
}

func (p *provider) close() { p.client.CloseIdleConnections() }

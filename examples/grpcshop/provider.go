package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// cardProvider is the card provider's HTTP API: POST /v1/charges and
// POST /v1/refunds, each answered 2xx with {"id": ...} when done, 402 when
// refused for good (a declined card, a payment that cannot be refunded)
// and anything else when nothing is known to be final.
type cardProvider struct {
	base    string
	timeout time.Duration
	http    *http.Client
}

func newCardProvider(base string, timeout time.Duration) *cardProvider {
	return &cardProvider{base: strings.TrimRight(base, "/"), timeout: timeout, http: &http.Client{}}
}

// verdict is what one provider call came to.
type verdict int

const (
	accepted verdict = iota // 2xx: done, id set
	refused                 // 402: refused for good, detail set
	unknown                 // 5xx, another 4xx, unreachable: nothing final
	noAnswer                // no answer within the provider timeout
)

// providerAnswer is a provider call's verdict, with the provider's id of
// what it did or why it refused.
type providerAnswer struct {
	verdict verdict
	id      string
	detail  string
}

// post sends one call (never retried: the caller's request_id decides
// whether it runs again), bounded by the provider timeout.
func (p *cardProvider) post(ctx context.Context, path string, body any) providerAnswer {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	raw, err := json.Marshal(body)
	if err != nil {
		return providerAnswer{verdict: unknown, detail: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+path, bytes.NewReader(raw))
	if err != nil {
		return providerAnswer{verdict: unknown, detail: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.http.Do(req)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return providerAnswer{verdict: noAnswer, detail: fmt.Sprintf("the provider did not answer within %s", p.timeout)}
	case err != nil:
		return providerAnswer{verdict: unknown, detail: "the provider is unreachable"}
	}
	defer resp.Body.Close()
	var answer struct {
		ID      string `json:"id"`
		Code    string `json:"code"`
		Message string `json:"message"`
		Error   any    `json:"error"`
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return providerAnswer{verdict: unknown, detail: "the provider's answer was cut short"}
	}
	_ = json.Unmarshal(data, &answer) // what does not parse stays empty
	switch {
	case resp.StatusCode/100 == 2:
		return providerAnswer{verdict: accepted, id: answer.ID}
	case resp.StatusCode == http.StatusPaymentRequired:
		detail := cmp.Or(answer.Code, answer.Message)
		if detail == "" && answer.Error != nil {
			detail = fmt.Sprint(answer.Error)
		}
		return providerAnswer{verdict: refused, detail: cmp.Or(detail, "refused")}
	}
	return providerAnswer{verdict: unknown, detail: fmt.Sprintf("the provider answered %d", resp.StatusCode)}
}

// chargeCall is the body of POST /v1/charges.
type chargeCall struct {
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
	Card        string `json:"card"`
	Reference   string `json:"reference"`
	Description string `json:"description"`
}

func (p *cardProvider) charge(ctx context.Context, c chargeCall) providerAnswer {
	return p.post(ctx, "/v1/charges", c)
}

// refundCall is the body of POST /v1/refunds.
type refundCall struct {
	Payment     string `json:"payment"`
	AmountCents int64  `json:"amount_cents"`
	Reason      string `json:"reason"`
	Reference   string `json:"reference"`
}

func (p *cardProvider) refund(ctx context.Context, r refundCall) providerAnswer {
	return p.post(ctx, "/v1/refunds", r)
}

func (p *cardProvider) close() { p.http.CloseIdleConnections() }

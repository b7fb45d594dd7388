package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// accounts maps API keys (Authorization: Bearer KEY) to accounts: the
// shop's two demo customers.
var accounts = map[string]string{"sk_test_alice": "acct_alice", "sk_test_bob": "acct_bob"}

// maxBody bounds a request body.
const maxBody = 64 << 10

// currency is the one currency the shop sells in.
const currency = "eur"

// problemBase is where the shop's error types are documented.
const problemBase = "https://shop.example/docs/errors#"

// shop is the API: POST /v1/orders places an order (charging the card
// through the payment provider) under an Idempotency-Key; GET /v1/orders
// lists the account's orders, GET /v1/orders/{id} reads one.
type shop struct {
	store    *store
	provider *provider
	ttl      time.Duration
	lease    time.Duration
	defect   defect
	events   *publisher // nil: the shop publishes no events
	// stopRelay ends the relay (events.go) and waits for it.
	stopRelay func()
	mux       *http.ServeMux
}

func newShop(st *store, p *provider, ttl, lease time.Duration, d defect) *shop {
	s := &shop{store: st, provider: p, ttl: ttl, lease: lease, defect: d, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /v1/orders", s.authenticated(s.createOrder))
	s.mux.HandleFunc("GET /v1/orders", s.authenticated(s.listOrders))
	s.mux.HandleFunc("GET /v1/orders/{id}", s.authenticated(s.getOrder))
	return s
}

func (s *shop) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// authenticated resolves the account before anything else: a request
// without valid credentials never reaches the idempotency layer.
func (s *shop) authenticated(next func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		account, known := accounts[token]
		if !ok || !known {
			w.Header().Set("WWW-Authenticate", `Bearer realm="shop"`)
			problem(w, http.StatusUnauthorized, "unauthenticated", "Unauthorized", "send Authorization: Bearer with a valid API key", nil)
			return
		}
		next(w, r, account)
	}
}

// orderRequest is the body of POST /v1/orders. Members the shop does not
// know are ignored, but they are part of the request's fingerprint.
type orderRequest struct {
	SKU       string `json:"sku"`
	Quantity  int    `json:"quantity"`
	Card      string `json:"card"`
	Reference string `json:"reference"`
	price     int64
}

// createOrder checks credentials, key and body (an invalid request never
// records its key), then places the order once per key.
func (s *shop) createOrder(w http.ResponseWriter, r *http.Request, account string) {
	key, missing, err := parseKey(r.Header.Values(keyHeader))
	switch {
	case missing:
		problem(w, http.StatusBadRequest, "idempotency-key-missing", "Idempotency-Key missing",
			"POST /v1/orders requires an Idempotency-Key header", nil)
		return
	case err != nil:
		problem(w, http.StatusBadRequest, "idempotency-key-invalid", "Idempotency-Key invalid", err.Error(), nil)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		problem(w, http.StatusRequestEntityTooLarge, "body-too-large", "Request body too large", "the body is over 64 KiB", nil)
		return
	}
	o, detail := s.validate(r.Context(), body)
	if detail != "" {
		problem(w, http.StatusBadRequest, "invalid-order", "Invalid order", detail, nil)
		return
	}
	fp, err := fingerprint(body)
	if err != nil {
		problem(w, http.StatusBadRequest, "invalid-order", "Invalid order", "the body is not JSON: "+err.Error(), nil)
		return
	}
	// The order is placed to the end even if the client hangs up: the
	// provider call and the record must not be cut in half.
	ctx := context.WithoutCancel(r.Context())
	s.once(ctx, w, scope{account: account, method: r.Method, path: r.URL.Path, key: key}, fp, o)
}

// validate parses and checks an order; detail says what is wrong.
func (s *shop) validate(ctx context.Context, body []byte) (orderRequest, string) {
	var o orderRequest
	if err := json.Unmarshal(body, &o); err != nil {
		return o, "the body is not a valid order: " + err.Error()
	}
	switch {
	case o.SKU == "":
		return o, "sku is required"
	case o.Quantity < 1 || o.Quantity > 100:
		return o, "quantity must be an integer from 1 to 100"
	case o.Card == "" || len(o.Card) > 64:
		return o, "card must be a card token of 1 to 64 characters"
	case len(o.Reference) > 128:
		return o, "reference must be at most 128 characters"
	}
	price, ok, err := s.store.price(ctx, o.SKU)
	switch {
	case err != nil:
		slog.Error("shop: price", "err", err)
		return o, "the catalog is unavailable; retry"
	case !ok:
		return o, "unknown sku " + strconv.Quote(o.SKU)
	}
	o.price = price
	return o, ""
}

// newOrder is a new attempt at order o under sc's key, not yet charged.
func newOrder(sc scope, o orderRequest) order {
	return order{
		OrderID: newID("ord_"), SKU: o.SKU, Quantity: o.Quantity, Amount: o.price * int64(o.Quantity),
		Currency: currency, Reference: o.Reference, CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
		account: sc.account, key: sc.key,
	}
}

// attempt charges row's order once (paying with o's card) and returns the
// row with its outcome and its answer: 201 with the order when paid, 402
// when declined, 502 when the provider failed, 504 when it did not answer
// in time.
func (s *shop) attempt(ctx context.Context, row order, o orderRequest) (order, *stored, result) {
	res := s.provider.charge(ctx, charge{Amount: row.Amount, Currency: row.Currency, Card: o.Card,
		Reference: o.Reference, OrderID: row.OrderID, Description: "shop order " + row.OrderID})
	extra := map[string]any{"order_id": row.OrderID}
	switch res.outcome {
	case paid:
		row.Status, row.PaymentID = "paid", res.paymentID
		resp := jsonDoc(http.StatusCreated, row)
		resp.Header.Set("Location", "/v1/orders/"+row.OrderID)
		return row, resp, res
	case declined:
		row.Status = "declined"
		return row, problemDoc(http.StatusPaymentRequired, "card-declined", "Card declined", res.reason, extra), res
	}
	row.Status = "failed"
	status, code := http.StatusBadGateway, "payment-provider-unavailable"
	if res.timedOut {
		status, code = http.StatusGatewayTimeout, "payment-provider-timeout"
	}
	return row, problemDoc(status, code, http.StatusText(status),
		"the payment provider failed ("+res.reason+"); nothing was charged as far as the shop knows: retry with the same Idempotency-Key", extra), res
}

// listOrders answers {"data": [...], "has_more": bool}, newest first;
// ?reference= keeps the orders with that reference, ?limit= (1-1000,
// default 100) bounds the page.
func (s *shop) listOrders(w http.ResponseWriter, r *http.Request, account string) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			problem(w, http.StatusBadRequest, "invalid-limit", "Invalid limit", "limit must be an integer from 1 to 1000", nil)
			return
		}
		limit = n
	}
	list, err := s.store.orders(r.Context(), account, r.URL.Query().Get("reference"), limit+1)
	if err != nil {
		s.unavailable(w, "list", err)
		return
	}
	more := len(list) > limit
	if more {
		list = list[:limit]
	}
	write(w, jsonDoc(http.StatusOK, map[string]any{"data": list, "has_more": more}))
}

func (s *shop) getOrder(w http.ResponseWriter, r *http.Request, account string) {
	o, err := s.store.order(r.Context(), account, r.PathValue("id"))
	switch {
	case err != nil:
		s.unavailable(w, "get", err)
	case o == nil:
		problem(w, http.StatusNotFound, "order-not-found", "Not Found", "no such order", nil)
	default:
		write(w, jsonDoc(http.StatusOK, o))
	}
}

// jsonDoc is a JSON response.
func jsonDoc(status int, v any) *stored {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // only the shop's own types are encoded
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return &stored{Status: status, Header: h, Body: append(body, '\n')}
}

// problemDoc is an RFC 9457 problem document whose type links to the
// shop's error docs.
func problemDoc(status int, code, title, detail string, extra map[string]any) *stored {
	doc := map[string]any{"type": problemBase + code, "title": title, "status": status, "detail": detail}
	for k, v := range extra {
		doc[k] = v
	}
	resp := jsonDoc(status, doc)
	resp.Header.Set("Content-Type", "application/problem+json")
	resp.Header.Set("Cache-Control", "no-store")
	return resp
}

func problem(w http.ResponseWriter, status int, code, title, detail string, extra map[string]any) {
	write(w, problemDoc(status, code, title, detail, extra))
}

// write sends resp (a fresh answer or a replay).
func write(w http.ResponseWriter, resp *stored) {
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body) // a client that hung up retries with its key
}

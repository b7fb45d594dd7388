package scenarios_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// ordersAPI is an orders API written apart from the reference, the shape
// issue 17 tried idemcheck on: POST /orders answers 201 {order_id, status,
// amount}, GET /orders lists {"data": [{order_id, idempotency_key, ...}]};
// no effects endpoint, no test knobs. Keys are sf-strings ("k"), scoped per
// Authorization header; a changed body under a used key is a 422.
type ordersAPI struct {
	// db, when set, also gets one row per order by insert (the key its
	// one argument).
	db     *sql.DB
	insert string
	// executeOnMismatch: a changed body under a used key creates its order
	// and then answers 422 (the defect ids alone cannot see).
	executeOnMismatch bool
	// lag: GET /orders serves a snapshot refreshed every lag, as a read
	// replica or an asynchronous index does.
	lag time.Duration
	// tenants: GET /orders lists only the caller's own orders (by
	// Authorization), as a multi-tenant API does.
	tenants bool

	mu      sync.Mutex
	records map[string]orderRecord // by principal and key
	orders  []map[string]any
	snap    []map[string]any
	snapAt  time.Time
}

type orderRecord struct {
	fingerprint string
	status      int
	body        []byte
}

func (a *ordersAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/orders":
		if a.lag > 0 && time.Since(a.snapAt) >= a.lag {
			a.snap, a.snapAt = append(make([]map[string]any, 0, len(a.orders)), a.orders...), time.Now()
		}
		list := append(make([]map[string]any, 0, len(a.orders)), a.orders...) // [] when empty, not null
		if a.lag > 0 {
			list = a.snap
		}
		if a.tenants {
			list = slices.DeleteFunc(slices.Clone(list), func(o map[string]any) bool { return o["owner"] != r.Header.Get("Authorization") })
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": list})
	case r.Method == http.MethodPost && r.URL.Path == "/orders":
		a.post(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (a *ordersAPI) post(w http.ResponseWriter, r *http.Request) {
	raw := r.Header.Get("Idempotency-Key")
	key, ok := strings.CutPrefix(raw, `"`)
	if key, ok = strings.CutSuffix(key, `"`); !ok || key == "" || len(r.Header.Values("Idempotency-Key")) != 1 || len(key) > 255 {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"Idempotency-Key: want one sf-string"}`))
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"body: want JSON"}`))
		return
	}
	canon, _ := json.Marshal(body) // map keys sorted: a canonical fingerprint
	scope := r.Header.Get("Authorization") + "\x00" + key
	if rec, ok := a.records[scope]; ok {
		if rec.fingerprint != string(canon) {
			if a.executeOnMismatch {
				a.create(r.Header.Get("Authorization"), key, body)
			}
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = w.Write([]byte(`{"type":"https://orders.test/problems/key-reused","title":"this key was used with another body","status":422}`))
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body)
		return
	}
	id := a.create(r.Header.Get("Authorization"), key, body)
	out, _ := json.Marshal(map[string]any{"order_id": id, "status": "created", "amount": body["amount"]})
	a.records[scope] = orderRecord{fingerprint: string(canon), status: http.StatusCreated, body: out}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(out)
}

// create is the handler's side effect: one order of owner, listed and
// stored.
func (a *ordersAPI) create(owner, key string, body map[string]any) string {
	id := fmt.Sprintf("ord_%d", len(a.orders)+1)
	a.orders = append(a.orders, map[string]any{"order_id": id, "idempotency_key": key, "amount": body["amount"], "reference": body["reference"], "owner": owner})
	if a.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := a.db.ExecContext(ctx, a.insert, key); err != nil {
			panic(err) // the test's database is gone: nothing to judge
		}
	}
	return id
}

// startOrders serves a on loopback and returns the target of
// ordersConfig with oracle (YAML, "" for none) as its evidence.
func startOrders(t testing.TB, a *ordersAPI, oracle string) *apispec.Target {
	t.Helper()
	a.records = map[string]orderRecord{}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return ordersTarget(t, srv.URL, "/order_id", oracle)
}

// ordersTarget is the config a user writes for the orders API.
func ordersTarget(t testing.TB, base, idPointer, oracle string) *apispec.Target {
	t.Helper()
	cfg := fmt.Sprintf(`base_url: %s
key_syntax: sf-string
principals:
  - {name: alice, headers: {Authorization: Bearer alice}}
  - {name: bob, headers: {Authorization: Bearer bob}}
operations:
  - name: orders
    method: POST
    path: /orders
    headers: {Content-Type: application/json}
    body: {sku: abc, quantity: 1, amount: 1000}
    id_pointer: %s
    mutations:
      - {name: changed-amount, patch: {amount: 1001}}
%s`, base, idPointer, oracle)
	path := t.TempDir() + "/idemcheck.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, _, err := apispec.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

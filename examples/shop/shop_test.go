package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// TestMain silences the shop's log: the broken builds log every lost
// lease, and the verdicts say what matters.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	testenv.Main(m)
}

// fakeProvider is a payment provider for the direct-HTTP tests: it
// answers by the charge's reference prefix (decline-: 402, fail-: 503,
// hang-: never, slow-: 200 after 1.5 s, else 200) and counts calls per
// reference.
type fakeProvider struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newFakeProvider(t *testing.T) *fakeProvider {
	p := &fakeProvider{calls: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c charge
		if r.Method != http.MethodPost || r.URL.Path != "/v1/payments" || json.NewDecoder(r.Body).Decode(&c) != nil {
			http.Error(w, "bad charge", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.calls[c.Reference]++
		n := p.calls[c.Reference]
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(c.Reference, "decline-"):
			w.WriteHeader(http.StatusPaymentRequired)
			fmt.Fprint(w, `{"error":"card_declined"}`)
			return
		case strings.HasPrefix(c.Reference, "fail-"):
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case strings.HasPrefix(c.Reference, "hang-"):
			<-r.Context().Done() // until the shop gives up
			return
		case strings.HasPrefix(c.Reference, "slow-"):
			select {
			case <-time.After(1500 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprintf(w, `{"id":"pay_%s_%d","status":"succeeded"}`, c.Reference, n)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeProvider) count(reference string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[reference]
}

// testShop is one build of the shop on a fresh schema, served on loopback.
type testShop struct {
	url      string
	shop     *shop
	provider *fakeProvider
	cfg      config
}

// startShop serves build d on a fresh schema, paying through a
// fakeProvider.
func startShop(t *testing.T, d defect, ttl time.Duration) *testShop {
	t.Helper()
	p := newFakeProvider(t)
	return startShopAt(t, testenv.RequirePostgres(t), p.srv.URL, d, ttl, p)
}

// startShopAt serves build d on database dsn, paying at providerURL.
func startShopAt(t *testing.T, dsn, providerURL string, d defect, ttl time.Duration, p *fakeProvider) *testShop {
	t.Helper()
	return startShopWith(t, config{dsn: dsn, providerURL: providerURL, ttl: ttl, lease: 5 * time.Second, providerTimeout: 3 * time.Second, defect: d}, p)
}

// startShopWith serves the shop cfg describes.
func startShopWith(t *testing.T, cfg config, p *fakeProvider) *testShop {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.Close(); s.close() })
	return &testShop{url: srv.URL, shop: s, provider: p, cfg: cfg}
}

// replica serves another shop of the same build on the same database.
func (ts *testShop) replica(t *testing.T) *testShop {
	t.Helper()
	return startShopWith(t, ts.cfg, ts.provider)
}

// reply is a response read in full.
type reply struct {
	status int
	header http.Header
	body   string
}

// post sends an order as alice; key "" sends no key, a key starting
// with a quote is sent as is, any other is sent as an sf-string.
func (ts *testShop) post(t *testing.T, key, body string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.url+"/v1/orders", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk_test_alice")
	req.Header.Set("Content-Type", "application/json")
	switch {
	case key == "":
	case strings.HasPrefix(key, `"`) || strings.HasPrefix(key, "raw:"):
		req.Header.Set(keyHeader, strings.TrimPrefix(key, "raw:"))
	default:
		req.Header.Set(keyHeader, `"`+key+`"`)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) reply {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// rows counts the orders recorded under key, as the SQL oracle does.
func (ts *testShop) rows(t *testing.T, key string) int {
	t.Helper()
	var n int
	if err := ts.shop.store.pool.QueryRow(context.Background(), `select count(*) from orders where idempotency_key = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func orderBody(ref string) string {
	return fmt.Sprintf(`{"sku":"abc","quantity":2,"card":"tok_visa","reference":%q}`, ref)
}

// The correct build with plain HTTP: one execution per key, the stored
// outcome replayed, a changed body refused, a decline kept, a provider
// failure forgotten.
func TestCorrectBuild(t *testing.T) {
	ts := startShop(t, "", time.Hour)

	t.Run("replay", func(t *testing.T) {
		key, ref := uuid.NewString(), "ok-"+uuid.NewString()
		first := ts.post(t, key, orderBody(ref))
		again := ts.post(t, key, orderBody(ref))
		if first.status != http.StatusCreated || !strings.Contains(first.body, `"order_id":"ord_`) {
			t.Fatalf("first: %d %s", first.status, first.body)
		}
		if again.status != first.status || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" ||
			again.header.Get("Location") != first.header.Get("Location") {
			t.Errorf("replay: %d %v %s, want the first response marked replayed", again.status, again.header, again.body)
		}
		if n, r := ts.provider.count(ref), ts.rows(t, key); n != 1 || r != 1 {
			t.Errorf("%d charges, %d orders; want 1 and 1", n, r)
		}
	})
	t.Run("canonical body", func(t *testing.T) {
		key, ref := uuid.NewString(), "ok-"+uuid.NewString()
		ts.post(t, key, orderBody(ref))
		reordered := ts.post(t, key, fmt.Sprintf(`{ "reference": %q, "card": "tok_visa", "quantity": 2, "sku": "abc" }`, ref))
		if reordered.status != http.StatusCreated || ts.provider.count(ref) != 1 {
			t.Errorf("reordered members: %d, %d charges; want the replay", reordered.status, ts.provider.count(ref))
		}
	})
	t.Run("changed body", func(t *testing.T) {
		key, ref := uuid.NewString(), "ok-"+uuid.NewString()
		first := ts.post(t, key, orderBody(ref))
		changed := ts.post(t, key, strings.Replace(orderBody(ref), `"quantity":2`, `"quantity":3`, 1))
		again := ts.post(t, key, orderBody(ref))
		if changed.status != http.StatusUnprocessableEntity || changed.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("changed body: %d %s, want a 422 problem", changed.status, changed.body)
		}
		if again.body != first.body || ts.provider.count(ref) != 1 || ts.rows(t, key) != 1 {
			t.Errorf("after the 422: %d %s, %d charges; want the original replayed, 1 charge", again.status, again.body, ts.provider.count(ref))
		}
	})
	t.Run("decline stored", func(t *testing.T) {
		key, ref := uuid.NewString(), "decline-"+uuid.NewString()
		first := ts.post(t, key, orderBody(ref))
		again := ts.post(t, key, orderBody(ref))
		if first.status != http.StatusPaymentRequired || again.body != first.body || again.status != first.status {
			t.Errorf("decline: %d then %d %s; want the 402 replayed", first.status, again.status, again.body)
		}
		if n, r := ts.provider.count(ref), ts.rows(t, key); n != 1 || r != 1 {
			t.Errorf("%d charges, %d orders; want 1 and 1 (the declined order)", n, r)
		}
	})
	t.Run("provider failure not stored", func(t *testing.T) {
		key, ref := uuid.NewString(), "fail-"+uuid.NewString()
		first := ts.post(t, key, orderBody(ref))
		again := ts.post(t, key, orderBody(ref))
		if first.status != http.StatusBadGateway || again.status != http.StatusBadGateway || again.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("provider 503: %d then %d; want 502 twice, not replayed", first.status, again.status)
		}
		if n, r := ts.provider.count(ref), ts.rows(t, key); n != 2 || r != 2 {
			t.Errorf("%d charges, %d orders; want 2 and 2 (each attempt ran)", n, r)
		}
	})
	t.Run("in flight", func(t *testing.T) {
		key, ref := uuid.NewString(), "slow-"+uuid.NewString()
		var slow reply
		var wg sync.WaitGroup
		wg.Go(func() { slow = ts.post(t, key, orderBody(ref)) })
		deadline := time.Now().Add(time.Second)
		for ts.provider.count(ref) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		dup := ts.post(t, key, orderBody(ref))
		wg.Wait()
		if dup.status != http.StatusConflict || dup.header.Get("Retry-After") == "" {
			t.Errorf("duplicate in flight: %d %v, want 409 with Retry-After", dup.status, dup.header)
		}
		if slow.status != http.StatusCreated || ts.provider.count(ref) != 1 {
			t.Errorf("slow original %d, %d charges; want 201, 1", slow.status, ts.provider.count(ref))
		}
	})
	t.Run("key syntax", func(t *testing.T) {
		for _, tc := range []struct{ name, key string }{
			{"missing", ""}, {"raw token", "raw:abc"}, {"empty", `""`}, {"blank", `"   "`}, {"parameters", `"abc";x=1`},
			{"two strings", `"a", "b"`}, {"too long", strings.Repeat("k", maxKeyLen+1)},
		} {
			ref := "ok-" + uuid.NewString()
			if r := ts.post(t, tc.key, orderBody(ref)); r.status != http.StatusBadRequest || ts.provider.count(ref) != 0 {
				t.Errorf("%s key: %d, %d charges; want 400 and none", tc.name, r.status, ts.provider.count(ref))
			}
		}
		if r := ts.post(t, strings.Repeat("k", maxKeyLen), orderBody("ok-"+uuid.NewString())); r.status != http.StatusCreated {
			t.Errorf("a %d-character key: %d, want 201", maxKeyLen, r.status)
		}
	})
	t.Run("invalid body not stored", func(t *testing.T) {
		key, ref := uuid.NewString(), "ok-"+uuid.NewString()
		if r := ts.post(t, key, strings.Replace(orderBody(ref), `"quantity":2`, `"quantity":0`, 1)); r.status != http.StatusBadRequest {
			t.Errorf("quantity 0: %d, want 400", r.status)
		}
		if r := ts.post(t, key, orderBody(ref)); r.status != http.StatusCreated {
			t.Errorf("the corrected body under the same key: %d, want 201", r.status)
		}
	})
	t.Run("list", func(t *testing.T) {
		ref := "ok-" + uuid.NewString()
		ts.post(t, uuid.NewString(), orderBody(ref))
		req, _ := http.NewRequest(http.MethodGet, ts.url+"/v1/orders?reference="+ref, nil)
		req.Header.Set("Authorization", "Bearer sk_test_alice")
		list := do(t, req)
		var page struct {
			Data []order `json:"data"`
		}
		if err := json.Unmarshal([]byte(list.body), &page); err != nil || len(page.Data) != 1 || page.Data[0].Reference != ref {
			t.Errorf("GET /v1/orders?reference=: %d %s", list.status, list.body)
		}
		req.Header.Set("Authorization", "Bearer sk_test_bob")
		if bob := do(t, req); !strings.Contains(bob.body, `"data":[]`) {
			t.Errorf("bob sees alice's orders: %s", bob.body)
		}
	})
}

// TestDefectsAreReal shows each broken build's bug with plain HTTP, and
// the same requests against the correct build not showing it: when
// idemcheck misses a defect, the gap is idemcheck's.
func TestDefectsAreReal(t *testing.T) {
	for _, tc := range []struct {
		defect defect
		// provoke sends the requests that expose the bug and says what it
		// saw and whether that is the bug.
		provoke func(t *testing.T, ts *testShop) (bool, string)
	}{
		{executeThen422, func(t *testing.T, ts *testShop) (bool, string) {
			key, ref := uuid.NewString(), "ok-"+uuid.NewString()
			ts.post(t, key, orderBody(ref))
			r := ts.post(t, key, strings.Replace(orderBody(ref), `"sku":"abc"`, `"sku":"def"`, 1))
			return r.status == http.StatusUnprocessableEntity && ts.provider.count(ref) == 2,
				fmt.Sprintf("changed body %d, %d charges", r.status, ts.provider.count(ref))
		}},
		{leaseLapses, func(t *testing.T, ts *testShop) (bool, string) {
			key, ref := uuid.NewString(), "slow-"+uuid.NewString()
			var wg sync.WaitGroup
			wg.Go(func() { ts.post(t, key, orderBody(ref)) })
			time.Sleep(1200 * time.Millisecond) // past a 1 s lease, within the 1.5 s charge
			r := ts.post(t, key, orderBody(ref))
			wg.Wait()
			return ts.provider.count(ref) >= 2, fmt.Sprintf("retry at +1.2 s %d, %d charges", r.status, ts.provider.count(ref))
		}},
		{checkThenInsert, func(t *testing.T, ts *testShop) (bool, string) {
			key, ref := uuid.NewString(), "ok-"+uuid.NewString()
			start := make(chan struct{})
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					<-start
					ts.post(t, key, orderBody(ref))
				})
			}
			close(start)
			wg.Wait()
			return ts.provider.count(ref) >= 2, fmt.Sprintf("8 at once, %d charges", ts.provider.count(ref))
		}},
		{wedges5xx, func(t *testing.T, ts *testShop) (bool, string) {
			key, ref := uuid.NewString(), "fail-"+uuid.NewString()
			first := ts.post(t, key, orderBody(ref))
			r := ts.post(t, key, orderBody(ref))
			return r.status == http.StatusConflict, fmt.Sprintf("%d then retry %d", first.status, r.status)
		}},
		{declinesNotStored, func(t *testing.T, ts *testShop) (bool, string) {
			key, ref := uuid.NewString(), "decline-"+uuid.NewString()
			ts.post(t, key, orderBody(ref))
			r := ts.post(t, key, orderBody(ref))
			return ts.provider.count(ref) == 2, fmt.Sprintf("retry %d, %d charges", r.status, ts.provider.count(ref))
		}},
	} {
		t.Run(string(tc.defect), func(t *testing.T) {
			t.Parallel()
			broken := startShop(t, tc.defect, time.Hour)
			correct := startShop(t, "", time.Hour)
			// A race may need a few rounds to show; each uses a fresh key.
			var seen []string
			for range 5 {
				showed, observed := tc.provoke(t, broken)
				if seen = append(seen, observed); showed {
					break
				}
				if len(seen) == 5 {
					t.Errorf("the defect did not show: %s", strings.Join(seen, "; "))
				}
			}
			if showed, observed := tc.provoke(t, correct); showed {
				t.Errorf("the correct build shows it too (%s): the requests do not tell the defect apart", observed)
			}
		})
	}
}

// Replicas starting together on an empty database all prepare the schema:
// concurrent CREATE TABLE IF NOT EXISTS fails on PostgreSQL without the
// schema lock.
func TestReplicasStartTogether(t *testing.T) {
	dsn := testenv.RequirePostgres(t)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := open(ctx, config{dsn: dsn, providerURL: "http://127.0.0.1:9", ttl: time.Hour, lease: 5 * time.Second, providerTimeout: time.Second})
			if err == nil {
				s.close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
}

// A replica starting on a current schema runs no DDL: an order being
// written (a row lock on orders, held open here) does not hold it up.
func TestStartBesideTraffic(t *testing.T) {
	dsn := testenv.RequirePostgres(t)
	cfg := config{dsn: dsn, providerURL: "http://127.0.0.1:9", ttl: time.Hour, lease: 5 * time.Second, providerTimeout: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first, err := open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer first.close()
	tx, err := first.store.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `LOCK TABLE orders, idempotency_records IN ROW EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	octx, ocancel := context.WithTimeout(ctx, 3*time.Second)
	defer ocancel()
	second, err := open(octx, cfg)
	if err != nil {
		t.Fatalf("a replica beside an open write: %v", err)
	}
	second.close()
}

// A provider that never answers costs one provider timeout: the shop
// answers 504 and releases the key, so the retry charges again.
func TestProviderTimeout(t *testing.T) {
	p := newFakeProvider(t)
	dsn := testenv.RequirePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := open(ctx, config{dsn: dsn, providerURL: p.srv.URL, ttl: time.Hour, lease: 1500 * time.Millisecond, providerTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer func() { srv.Close(); s.close() }()
	ts := &testShop{url: srv.URL, shop: s, provider: p}
	key, ref := uuid.NewString(), "hang-"+uuid.NewString()
	first := ts.post(t, key, orderBody(ref))
	again := ts.post(t, key, orderBody(ref))
	if first.status != http.StatusGatewayTimeout || again.status != http.StatusGatewayTimeout {
		t.Errorf("a hanging provider: %d then %d, want 504 twice", first.status, again.status)
	}
	if n := ts.provider.count(ref); n != 2 {
		t.Errorf("%d charges, want 2 (the key was released after the timeout)", n)
	}
}

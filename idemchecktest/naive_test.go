package idemchecktest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/idemchecktest"
)

// naive is the idempotency a newcomer writes first: the response kept in
// a map by key, looked up, the payment made, the response stored. Its two
// bugs: the lookup and the store are two steps (a same-key burst executes
// more than once), and nothing ties the key to the body (a changed body
// gets the old response). The mutex keeps each map access memory-safe, so
// -race stays quiet; it does not make the lookup and the store one step.
type naive struct {
	mu    sync.Mutex
	saved map[string][]byte
	n     atomic.Int64
}

func (h *naive) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Amount   int    `json:"amount"`
		Currency string `json:"currency"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Amount <= 0 {
		http.Error(w, `{"error":"invalid payment"}`, http.StatusBadRequest)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	h.mu.Lock()
	saved, seen := h.saved[key]
	h.mu.Unlock()
	if key != "" && seen {
		write(w, saved)
		return
	}
	out, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("pay_%d", h.n.Add(1)), "amount": in.Amount, "currency": in.Currency})
	if key != "" {
		h.mu.Lock()
		h.saved[key] = out
		h.mu.Unlock()
	}
	write(w, out)
}

func write(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

// naiveConfig is what a newcomer writes for it: no base_url (Handler
// serves it), one operation, no mutations, no oracle.
const naiveConfig = `key_header: Idempotency-Key
key_syntax: raw
timeout: 5s
principals: [{name: alice, headers: {Authorization: Bearer alice}}]
operations:
  - name: payments
    method: POST
    path: /payments
    headers: {Content-Type: application/json}
    body: {amount: 100, currency: EUR}
    id_pointer: /id
profile:
  preset: ietf
`

func init() {
	inner["naive"] = func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "idemcheck.yaml")
		if err := os.WriteFile(cfg, []byte(naiveConfig), 0o600); err != nil {
			t.Fatal(err)
		}
		idemchecktest.Handler(t, &naive{saved: map[string][]byte{}}, idemchecktest.Config{Config: cfg})
	}
}

// TestNaiveHandlerFails: the go-test face catches both bugs of the naive
// handler in (nearly) every run, each with what to fix, and the race
// detector finds nothing in the harness.
func TestNaiveHandlerFails(t *testing.T) {
	runs := 20
	if testing.Short() {
		runs = 3
	}
	caught := map[string]int{}
	for i := range runs {
		out, failed := runInner(t, "naive", 2*time.Minute)
		if strings.Contains(out, "DATA RACE") {
			t.Fatalf("run %d: the race detector flagged a race:\n%s", i+1, out)
		}
		if !failed {
			t.Errorf("run %d: the naive handler passed:\n%s", i+1, out)
			continue
		}
		for _, c := range []struct{ name, fix string }{
			{"concurrent/same-key-burst@payments", "claim the key atomically before executing"},
			{"mismatch/changed-body@payments", "store a fingerprint of the request body with the key"},
		} {
			if strings.Contains(out, "--- FAIL: TestInner/"+c.name) && strings.Contains(out, c.fix) {
				caught[c.name]++
			}
		}
		if i == 0 {
			t.Logf("first run:\n%s", out)
		}
	}
	for _, name := range []string{"concurrent/same-key-burst@payments", "mismatch/changed-body@payments"} {
		t.Logf("%s failed, saying what to fix, in %d of %d runs", name, caught[name], runs)
		if caught[name] < runs-runs/20 {
			t.Errorf("%s: caught in %d of %d runs, want at least %d", name, caught[name], runs, runs-runs/20)
		}
	}
}

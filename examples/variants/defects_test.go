package variants

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestDefectsAreReal shows each broken server's defect with plain HTTP
// requests, without idemcheck: when a catalog case misses one, the gap is
// the engine's, not the server's.
func TestDefectsAreReal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		choices Choices
		// provoke sends the requests that expose the defect and returns
		// how many times the handler ran for them.
		provoke func(t *testing.T, base, key string) int
		// min is the fewest runs that show the defect (a correct server
		// stays below it).
		min int
	}{
		{"mismatch-executes", Choices{ExecuteOnMismatch: true}, func(t *testing.T, base, key string) int {
			post(t, base, key, `{"amount":1000,"currency":"usd"}`)
			if got := post(t, base, key, `{"amount":1001,"currency":"usd"}`); got != http.StatusUnprocessableEntity {
				t.Errorf("changed body: %d, want 422", got)
			}
			return executions(t, base, key)
		}, 2},
		{"lock-lapses", Choices{LockLapse: time.Second}, func(t *testing.T, base, key string) int {
			var wg sync.WaitGroup
			wg.Go(func() { post(t, base, key, `{"amount":1000,"currency":"usd","sleep_ms":1500}`) })
			time.Sleep(1200 * time.Millisecond) // late in the original's 1.5 s, after the 1 s lock
			post(t, base, key, `{"amount":1000,"currency":"usd","sleep_ms":1500}`)
			wg.Wait()
			return executions(t, base, key)
		}, 2},
		{"missing-executes", Choices{ExecuteMissing: true}, func(t *testing.T, base, _ string) int {
			if got := post(t, base, "", `{"amount":1000,"currency":"usd"}`); got != http.StatusBadRequest {
				t.Errorf("no key: %d, want 400", got)
			}
			return effects(t, base+"/_effects")["charges"]
		}, 1},
		{"racy-expiry", Choices{RacyExpiry: true, TTL: 200 * time.Millisecond}, func(t *testing.T, base, key string) int {
			post(t, base, key, `{"amount":1000,"currency":"usd"}`)
			time.Sleep(300 * time.Millisecond)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					<-start
					post(t, base, key, `{"amount":1000,"currency":"usd"}`)
				})
			}
			close(start)
			wg.Wait()
			return executions(t, base, key)
		}, 3}, // 1 before expiry, exactly 1 more is legal

	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(New(tc.choices))
			defer srv.Close()
			// A race may need a few rounds to show; each uses a fresh key.
			var runs []int
			for range 5 {
				n := tc.provoke(t, srv.URL, uuid.NewString())
				if runs = append(runs, n); n >= tc.min {
					break
				}
			}
			if runs[len(runs)-1] < tc.min {
				t.Errorf("handler runs per round %v, never %d: the defect did not show", runs, tc.min)
			}
			srv.CloseClientConnections()

			// The same requests against the correct core stay below min.
			core := httptest.NewServer(New(Choices{TTL: tc.choices.TTL}))
			defer core.Close()
			if n := tc.provoke(t, core.URL, uuid.NewString()); n >= tc.min {
				t.Errorf("the correct core ran the handler %d times: the probe does not tell the defect apart", n)
			}
			core.CloseClientConnections()
		})
	}
}

// post sends a charge as alice under key ("" sends none) and returns the
// status.
func post(t *testing.T, base, key, body string) int {
	req, err := http.NewRequest(http.MethodPost, base+"/api/charges", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok_alice")
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", `"`+key+`"`)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func executions(t *testing.T, base, key string) int {
	return effects(t, base+"/_effects?key="+key)["executions"]
}

func effects(t *testing.T, u string) map[string]int {
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

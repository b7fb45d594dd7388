package idemchecktest_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/reference/client"
)

// refCall makes one charge through c, the shared client object.
func refCall(c func(base string) *client.Client) func(ctx context.Context, base string) (string, error) {
	return func(ctx context.Context, base string) (string, error) {
		return c(base).CreateCharge(ctx, client.Charge{Amount: 1000, Currency: "usd"})
	}
}

// shared keeps one client per base URL: an application's one SDK object.
func shared(defects ...client.Defect) func(base string) *client.Client {
	clients := map[string]*client.Client{}
	var mu sync.Mutex
	return func(base string) *client.Client {
		mu.Lock()
		defer mu.Unlock()
		if clients[base] == nil {
			clients[base] = client.New(base, "", defects...)
		}
		return clients[base]
	}
}

func init() {
	inner["fresh-key-client"] = func(t *testing.T) {
		idemchecktest.Client(t, idemchecktest.ClientConfig{}, refCall(shared(client.FreshKeyPerRetry)),
			idemchecktest.Only("retry/lost-answer", "retry/after-503"))
	}
}

// TestClient: the go test face passes the reference client under Strict.
func TestClient(t *testing.T) {
	idemchecktest.Client(t, idemchecktest.ClientConfig{}, refCall(shared()), idemchecktest.Strict())
}

// TestClientCatchesFreshKeyPerAttempt: a client minting a new key per
// attempt fails retry/lost-answer, naming the second key, in 5 of 5 runs.
func TestClientCatchesFreshKeyPerAttempt(t *testing.T) {
	for i := range 5 {
		out, failed := runInner(t, "fresh-key-client", 2*time.Minute)
		if !failed || !strings.Contains(out, "--- FAIL: TestInner/retry/lost-answer") || !strings.Contains(out, "a second key for one call") {
			t.Fatalf("run %d of 5: the fresh-key-per-attempt client was not caught:\n%s", i+1, out)
		}
	}
}

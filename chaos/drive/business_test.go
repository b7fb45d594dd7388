package drive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/chaos/drive"
)

// conflictShop answers a body asking for a conflict with a business 409
// ("order already placed"), anything else 201 with a fresh id, and
// replays each key's first answer.
func conflictShop() http.Handler {
	var mu sync.Mutex
	seen := map[string][2]string{}
	n := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		k := r.Header.Get("Idempotency-Key")
		mu.Lock()
		a, ok := seen[k]
		if !ok {
			n++
			a = [2]string{"201", fmt.Sprintf(`{"id":"ord_%d"}`, n)}
			if bytes.Contains(body, []byte(`"conflict"`)) {
				a = [2]string{"409", `{"error":"order already placed"}`}
			}
			seen[k] = a
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if a[0] == "409" {
			w.WriteHeader(http.StatusConflict)
		} else {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = w.Write([]byte(a[1]))
	})
}

// TestBusinessConflictEnds: an operation whose business error is a 409
// (declared so by its business_error variant) ends on the first 409, a
// definite failure, where the profile's in-flight answer is 409 too; it
// was retried to the attempt limit and ended unknown. Under a profile
// whose in-flight answer is 423, any 409 ends the operation.
func TestBusinessConflictEnds(t *testing.T) {
	srv := httptest.NewServer(conflictShop())
	defer srv.Close()
	for _, tc := range []struct {
		name     string
		inFlight []int
		declared int // the business_error variant's status
	}{
		{"409 declared, in-flight 409", []int{409}, 409},
		{"in-flight 423", []int{423}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := apispec.FromURL(srv.URL, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			tg.Oracle = nil
			op := tg.Operations[0]
			op.Mutations = nil
			op.Variants = map[string]apispec.Variant{apispec.VariantBusinessError: {Patch: json.RawMessage(`{"fail":"conflict"}`), Status: tc.declared}}
			tg.Operations = []apispec.Operation{op}
			p := ietf(t)
			p.InFlightStatus = tc.inFlight
			res, err := drive.Run(context.Background(), tg, drive.WithOps(100), drive.WithConcurrency(8), drive.WithSeed(7),
				drive.WithProfile(p), drive.WithMaxAttempts(6), drive.WithDeadline(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if res.FailsByKind[chaos.KindBusiness] == 0 {
				t.Fatalf("no business operation ended on its 409: outcomes %v, fails by kind %v", res.Outcomes, res.FailsByKind)
			}
			if res.Unresolved != 0 || res.Attempts != res.Ops || len(res.Violations) != 0 {
				t.Errorf("%d unresolved, %d attempts for %d operations, violations %v: want each operation ended on its first answer", res.Unresolved, res.Attempts, res.Ops, res.Violations)
			}
		})
	}
}

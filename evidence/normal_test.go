package evidence

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// TestCheckNormal: any 2xx to the normal request lets the run go on (200,
// 201 and 202 alike); anything else stops it naming each operation's
// status and body. Every probe goes under a fresh key that no face's
// own numbering (--hash-keys from 1) reaches.
func TestCheckNormal(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	status := map[string]int{"/v1/charges": http.StatusCreated, "/v1/refunds": http.StatusAccepted}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		code := status[r.URL.Path]
		mu.Unlock()
		if code == 0 {
			code = http.StatusOK
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"error":"nope"}`))
	}))
	defer srv.Close()
	tg, err := apispec.FromURL(srv.URL, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	tg.KeyGen = apispec.HashKeys("seed")
	ctx := context.Background()
	if err := CheckNormal(ctx, tg, wire.NewCarrier(tg, srv.Client()), nil, NormalKeys(tg, srv.Client()), nil); err != nil {
		t.Fatalf("201 and 202: %v, want nil", err)
	}
	mu.Lock()
	status["/v1/charges"] = http.StatusOK
	status["/v1/refunds"] = http.StatusUnprocessableEntity
	mu.Unlock()
	err = CheckNormal(ctx, tg, wire.NewCarrier(tg, srv.Client()), nil, NormalKeys(tg, srv.Client()), nil)
	if !errors.Is(err, ErrNotWorking) || !errors.Is(err, apispec.ErrUnreachable) {
		t.Fatalf("a 422: %v, want ErrNotWorking (an ErrUnreachable: exit 4)", err)
	}
	want := "refunds: POST " + srv.URL + `/v1/refunds answered 422 {"error":"nope"}`
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "charges:") {
		t.Errorf("error %q: want the one line %q and none for charges (200)", err, want)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			t.Errorf("key %s sent by two probes", k)
		}
		seen[k] = true
	}
	for n := uint64(1); n <= 1000; n++ {
		if k := tg.KeyValue(apispec.HashKeys("seed")(n)); seen[k] {
			t.Errorf("a probe used the run's own key number %d", n)
		}
	}
}

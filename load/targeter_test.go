package load

import (
	"net/http"
	"strings"
	"testing"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/apispec"
)

// TestPoolTargets: hit, mix and contention send prepared targets: each
// carries its key's header and URL, the replicas are taken in turn, the
// keys cycle, and sending one allocates nothing (a bare vegeta loop's
// fixed targets do not either).
func TestPoolTargets(t *testing.T) {
	tg0 := &apispec.Target{BaseURL: "http://127.0.0.1:1", Replicas: []string{"http://127.0.0.1:1", "http://127.0.0.2:1"},
		KeyHeader: "Idempotency-Key", Principals: []apispec.Principal{{Name: "alice", Headers: map[string]string{"Authorization": "Bearer alice"}}}}
	op := &apispec.Operation{Name: "charges", Method: http.MethodPost, Path: "/v1/charges", Body: []byte(`{}`)}
	rq := &request{t: tg0, op: op, bases: tg0.Bases(), body: op.Body}
	pool := []string{"a", "b", "c"}
	tr := rq.targeter(ModeHit, 0, pool, nil, nil)
	var tg vegeta.Target
	for i := range 6 {
		if err := tr(&tg); err != nil {
			t.Fatal(err)
		}
		key := pool[i%3]
		wantHost := []string{"127.0.0.1", "127.0.0.2"}[i%2]
		if got := tg.Header.Get("Idempotency-Key"); got != `"`+key+`"` {
			t.Errorf("request %d: key %q, want %q", i, got, `"`+key+`"`)
		}
		if !strings.Contains(tg.URL, wantHost) || !strings.HasSuffix(tg.URL, "#path=hit&key="+key) {
			t.Errorf("request %d: URL %q, want replica %s and key %s", i, tg.URL, wantHost, key)
		}
		if p, k, ok := Classify(&vegeta.Result{URL: tg.URL}); !ok || p != Hit || k != key {
			t.Errorf("request %d: classified %s %q %v", i, p, k, ok)
		}
		if tg.Header.Get("Authorization") != "Bearer alice" || tg.Method != http.MethodPost || string(tg.Body) != "{}" {
			t.Errorf("request %d: %s %q %v", i, tg.Method, tg.Body, tg.Header)
		}
	}
	if n := testing.AllocsPerRun(200, func() { _ = tr(&tg) }); n != 0 {
		t.Errorf("a hit target allocates %.0f times, want 0", n)
	}
}

package scenarios

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestUntilDoneWaitsOutInFlightStatuses: the lost-response retries treat
// every in-flight status of the profile (423, 425...) as "not done yet",
// as they do a 409, instead of taking it as the final answer.
func TestUntilDoneWaitsOutInFlightStatuses(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusLocked)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	client := NewClient(5 * time.Second)
	defer client.CloseIdleConnections()
	op := &Operation{Name: "op", Method: http.MethodPost, Path: "/"}
	p, err := ProfileByName("lenient") // in_flight_status includes 423
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{Target: &Target{BaseURL: srv.URL, KeyHeader: "Idempotency-Key", KeySyntax: Raw}, Profile: p, Op: op, client: client}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs := e.untilDone(ctx, "retry", "k", nil)
	if last := rs[len(rs)-1]; len(rs) != 3 || last.Status != http.StatusCreated {
		t.Errorf("untilDone stopped after %d answers at %s, want 3 ending in 201 (423 is an in-flight status of the profile)", len(rs), last.String())
	}
}

// TestInTTLAnswered: a quick retry sent inside TTL − margin but answered
// past it (the client stalled between its send time and the server's
// work) may have been handled after the key legally expired: a judgment
// against it is inconclusive. One answered in time stands.
func TestInTTLAnswered(t *testing.T) {
	e := &Env{Target: &Target{TTL: 3 * time.Second}, Profile: &Profile{Margin: 500 * time.Millisecond}}
	t0 := time.Now()
	orig := Resp{Start: t0, End: t0.Add(10 * time.Millisecond)}
	fail := Verdict{Status: Fail, Expected: "the replay", Observed: "a new execution"}
	stalled := Resp{Start: t0.Add(time.Second), End: t0.Add(4 * time.Second)}
	if v := e.inTTLAnswered(fail, orig, stalled); v.Status != Inconclusive || !strings.Contains(v.Reason, "answered") {
		t.Errorf("retry sent at +1s, answered at +4s (TTL 3s): %s %q, want inconclusive", v.Status, v.Reason)
	}
	prompt := Resp{Start: t0.Add(time.Second), End: t0.Add(time.Second + 5*time.Millisecond)}
	if v := e.inTTLAnswered(fail, orig, prompt); v.Status != Fail {
		t.Errorf("retry answered at +1s: %s, want the failure to stand", v.Status)
	}
}

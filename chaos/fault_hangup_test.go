package chaos_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/wire"
)

// slowUpstream takes its time and records whether its client hung up on
// it (the request's context cancelled) while it ran.
type slowUpstream struct {
	d         time.Duration
	cancelled atomic.Int64
	done      chan struct{}
}

func (s *slowUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() { s.done <- struct{}{} }()
	// net/http notices a hang-up once the body was read to its end.
	_, _ = io.ReadAll(r.Body)
	select {
	case <-r.Context().Done():
		s.cancelled.Add(1)
	case <-time.After(s.d):
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id":"ch_1"}`))
}

// TestHangup: the upstream's handler sees its client give up while it
// runs (its context cancelled), the client gets no answer, and the
// history says the upstream was hung up on; an upstream quicker than
// after= answers, and the history keeps that answer.
func TestHangup(t *testing.T) {
	body := `{"amount":1000,"currency":"usd"}`
	for _, tc := range []struct {
		spec      string
		slow      time.Duration
		cancelled int64
		status    int
	}{
		{"hangup:after=50ms", 2 * time.Second, 1, 0},
		{"hangup:after=50ms,mode=rst", 2 * time.Second, 1, 0},
		{"hangup:after=1s", 0, 0, 201},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			up := &slowUpstream{d: tc.slow, done: make(chan struct{}, 1)}
			front, _, rec := startProxy(t, up, tc.spec)
			c := wire.NewClient(5 * time.Second)
			defer c.CloseIdleConnections()
			start := time.Now()
			if _, _, err := post(t, c, front.URL, "k1", body); err == nil {
				t.Fatal("the client got an answer")
			}
			select {
			case <-up.done:
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream handler did not finish")
			}
			if tc.slow > 0 && time.Since(start) >= tc.slow {
				t.Errorf("the handler ran its full %s: no hang-up reached it", tc.slow)
			}
			if got := up.cancelled.Load(); got != tc.cancelled {
				t.Errorf("handler saw its context cancelled %d times, want %d", got, tc.cancelled)
			}
			front.Close()
			evs := events(t, rec, 1)
			if len(evs) != 1 || len(evs[0].Upstream) != 1 {
				t.Fatalf("history %+v: want one attempt forwarded once", evs)
			}
			u := evs[0].Upstream[0]
			if u.Status != tc.status || (tc.status == 0) != (u.Error != "") {
				t.Errorf("upstream %+v: want status %d and an error exactly when hung up", u, tc.status)
			}
		})
	}
}

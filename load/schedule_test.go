package load

import (
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestScheduleDue: at 1000/s vegeta's n-th send is due (n+1) ms in, out
// of order and past the kept ring alike; a result that left late gets its
// lateness added, one on time keeps its latency.
func TestScheduleDue(t *testing.T) {
	began := time.Now()
	s := newSchedule(vegeta.Rate{Freq: 1000, Per: time.Second}, began)
	for _, seq := range []uint64{5, 0, 3, scheduleRing + 10, 7, 0} {
		d, ok := s.due(seq)
		if want := time.Duration(seq+1) * time.Millisecond; !ok || d != want {
			t.Errorf("send %d due %s (ok %v), want %s", seq, d, ok, want)
		}
	}
	r := &vegeta.Result{Seq: 9, Timestamp: began.Add(25 * time.Millisecond), Latency: 2 * time.Millisecond}
	s.retime(r)
	if r.Latency != 17*time.Millisecond {
		t.Errorf("send 9 due at 10 ms left at 25 ms with 2 ms latency: retimed %s, want 17ms", r.Latency)
	}
	r = &vegeta.Result{Seq: 9, Timestamp: began.Add(10 * time.Millisecond), Latency: 2 * time.Millisecond}
	if s.retime(r); r.Latency != 2*time.Millisecond {
		t.Errorf("an on-time send retimed to %s, want 2ms", r.Latency)
	}
}

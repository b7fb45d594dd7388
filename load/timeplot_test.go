package load

import (
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// result is a measured result of path p at t0+at with latency lat.
func result(p Path, t0 time.Time, at, lat time.Duration) *vegeta.Result {
	return &vegeta.Result{URL: "http://127.0.0.1:1/v1/charges#path=" + string(p) + "&key=k", Timestamp: t0.Add(at), Latency: lat, Code: 201}
}

// TestTimePlotBounded: past maxTimePoints a series halves its points and
// its sampling rate, so memory stays bounded and the run's whole span
// stays drawn.
func TestTimePlotBounded(t *testing.T) {
	p := NewTimePlot()
	t0 := time.Now()
	n := 3*maxTimePoints + 7
	for i := range n {
		p.Add(result(Hit, t0, time.Duration(i)*time.Microsecond, time.Millisecond))
	}
	s := p.Paths[Hit]
	if len(s.At) > maxTimePoints || len(s.At) < maxTimePoints/2 || s.Seen != uint64(n) {
		t.Fatalf("%d points kept of %d seen (stride %d), want between %d and %d", len(s.At), s.Seen, s.stride, maxTimePoints/2, maxTimePoints)
	}
	if last := time.Duration(s.At[len(s.At)-1] - t0.UnixNano()); last < time.Duration(n-int(s.stride)*2)*time.Microsecond {
		t.Errorf("the last kept point is at %s of %s: the end of the run is lost", last, time.Duration(n)*time.Microsecond)
	}
}

package load

import (
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TimePlot keeps each measured result's send time and latency per path
// for the latency-over-time plot (reports/loadreport draws it). vegeta's
// own plot puts every path's points in one table where a mix's miss
// points are never adjacent, so its miss line was never drawn; here every
// path is its own series.
type TimePlot struct {
	Paths map[Path]*TimeSeries
}

// maxTimePoints bounds the points one path keeps: beyond it the series
// keeps every second point and samples at half the rate (memory stays
// bounded whatever the run length; the shape over time stays).
const maxTimePoints = 1 << 18

// TimeSeries is one path's sampled results: At[i] and LatencyMs[i] are
// one kept result.
type TimeSeries struct {
	At        []int64   // send time, Unix ns
	LatencyMs []float32 // latency, ms
	Errors    int       // results with a transport error (drawn apart)
	Seen      uint64    // every result of the path, kept or not
	stride    uint64    // keep one result in stride
}

// NewTimePlot is an empty plot.
func NewTimePlot() *TimePlot { return &TimePlot{Paths: map[Path]*TimeSeries{}} }

// Add records a measured result (warm-up is not measured).
func (p *TimePlot) Add(r *vegeta.Result) {
	path, _, ok := Classify(r)
	if !ok || path == warmup {
		return
	}
	s := p.Paths[path]
	if s == nil {
		s = &TimeSeries{stride: 1}
		p.Paths[path] = s
	}
	if r.Error != "" {
		s.Errors++
	}
	s.Seen++
	if s.Seen%s.stride != 0 {
		return
	}
	if len(s.At) == maxTimePoints {
		for i := 0; i < len(s.At)/2; i++ {
			s.At[i], s.LatencyMs[i] = s.At[2*i], s.LatencyMs[2*i]
		}
		s.At, s.LatencyMs = s.At[:len(s.At)/2], s.LatencyMs[:len(s.LatencyMs)/2]
		s.stride *= 2
	}
	s.At = append(s.At, r.Timestamp.UnixNano())
	s.LatencyMs = append(s.LatencyMs, float32(r.Latency)/float32(time.Millisecond))
}

package load

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// p99 is the 99th percentile latency over every measured path so far, for
// the live progress line.
func (c *collector) p99() time.Duration {
	all := hdrhistogram.New(hdrMin, hdrMax, hdrDigits)
	for _, m := range c.paths {
		all.Merge(m.hist)
	}
	return time.Duration(all.ValueAtQuantile(99)) * time.Microsecond
}

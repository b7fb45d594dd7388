package load

import (
	"fmt"
	"time"
)

// lateTolerance is how far behind the rate plan a send may start before it
// counts as delayed.
const lateTolerance = time.Millisecond

// delayedShareLimit is the share of delayed requests above which latency
// thresholds cannot pass: the figures then omit the queueing the users of
// an open-loop workload would have seen (coordinated omission).
const delayedShareLimit = 0.01

// delayedShare is the share of measured requests the worker cap delayed.
func (r *Summary) delayedShare() float64 {
	var n uint64
	for _, s := range r.Paths {
		n += s.Requests
	}
	if n == 0 {
		return 0
	}
	return float64(r.Delayed) / float64(n)
}

// DelayWarning is a one-line warning when the worker cap delayed sends,
// empty otherwise.
func (r *Summary) DelayWarning() string {
	if r.Delayed == 0 {
		return ""
	}
	msg := fmt.Sprintf("warning: %d requests (%.2f%%) left more than %s behind the rate plan because all max-workers were busy; latency omits that wait",
		r.Delayed, 100*r.delayedShare(), lateTolerance)
	if r.LatencyFrom == LatencyFromIntended {
		return fmt.Sprintf("warning: %d requests (%.2f%%) left more than %s behind the rate plan because all max-workers were busy; latency includes that wait (timed from the intended send; raise --max-workers to measure the server alone)",
			r.Delayed, 100*r.delayedShare(), lateTolerance)
	}
	if r.delayedShare() > delayedShareLimit {
		msg += fmt.Sprintf(" — over %.0f%%, so latency thresholds fail (raise --max-workers or lower the rate)", 100*delayedShareLimit)
	}
	return msg
}

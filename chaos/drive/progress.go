package drive

import (
	"sync"

	"github.com/idemcheck/idemcheck/chaos"
)

// Progress is a live snapshot of a run, passed to Config.OnProgress.
type Progress struct {
	Done   int   // operations finished
	Faults int64 // faults the proxy injected so far
	// Doubles counts operations whose effects oracle saw more than one
	// execution: the violations visible while running. The exactly-once
	// check over the whole history runs at the end.
	Doubles int
}

// tracker feeds Config.OnProgress after each operation.
type tracker struct {
	mu    sync.Mutex
	p     Progress
	proxy *chaos.Proxy
	f     func(Progress)
}

// newTracker returns the per-operation hook, nil without OnProgress.
func newTracker(cfg Config, proxy *chaos.Proxy) func(chaos.Op) {
	if cfg.OnProgress == nil {
		return nil
	}
	t := &tracker{proxy: proxy, f: cfg.OnProgress}
	return t.op
}

func (t *tracker) op(op chaos.Op) {
	var faults int64
	for _, n := range t.proxy.Counters().Faults {
		faults += n
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.Done++
	t.p.Faults = faults
	if op.Oracle != nil && *op.Oracle > 1 && op.Kind != chaos.KindTransient {
		t.p.Doubles++
	}
	t.f(t.p)
}

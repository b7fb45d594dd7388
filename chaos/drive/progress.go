package drive

import (
	"sync"

	"github.com/idemcheck/idemcheck/chaos"
)

// Progress is a live snapshot of a run, passed to WithProgress's function.
type Progress struct {
	Done   int   // operations finished
	Faults int64 // faults the proxy injected so far
	// Violations counts the exactly-once violations of the finished
	// operations, by the final check's rules over what the proxy recorded
	// of their keys (an after-TTL execution, an answer the harness
	// dropped: not counted). The check over the whole history runs at the
	// end.
	Violations int
}

// tracker feeds WithProgress's function after each operation. It judges each
// finished operation's key with a checker of its own, fed the proxy's
// attempts as they are recorded, then forgets the key.
type tracker struct {
	mu      sync.Mutex
	p       Progress
	proxy   interface{ Counters() chaos.Counters }
	checker *chaos.Checker
	f       func(Progress)
}

// newTracker returns the per-operation hook (nil without WithProgress) and
// has the history show it every attempt.
func newTracker(cfg config, proxy interface{ Counters() chaos.Counters }, hist *chaos.History) func(chaos.Op) {
	if cfg.onProgress == nil {
		return nil
	}
	c := chaos.NewChecker()
	c.TTL, c.Margin, c.ReplicaKills = cfg.target.TTL, cfg.margin, cfg.replicas > 0 && cfg.killEvery > 0
	t := &tracker{proxy: proxy, checker: c, f: cfg.onProgress}
	hist.Observe(func(ev chaos.Event) {
		t.mu.Lock()
		defer t.mu.Unlock()
		c.Attempt(ev)
	})
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
	t.checker.Op(op)
	t.p.Violations += t.checker.KeyViolations(op.Key)
	t.f(t.p)
}

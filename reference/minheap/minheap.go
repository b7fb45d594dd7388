package minheap

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// goMinimum is the runtime's minimum heap goal at GOGC=100; it scales with
// the percent (runtime/mgcpacer.go, heapMinimum).
const goMinimum = 4 << 20

// Percent is the collector target that makes the next heap goal reach
// floor bytes, given the live heap and the stacks and globals the
// collector scans, or 100 (Go's default) once the default goal is already
// past the floor. Go's goal is max(goMinimum*p/100, live+(live+scan)*p/100),
// so the percent is the least that takes either term to the floor.
func Percent(live, scan, floor uint64) int {
	roots := live + scan
	if roots == 0 || live+roots >= floor {
		return 100
	}
	byMinimum := floor * 100 / goMinimum
	byGoal := (floor - live) * 100 / roots
	return int(max(100, min(byMinimum, byGoal)))
}

// Keep holds the heap goal at floor bytes or more until stop is called,
// which restores the percent Keep found. It re-reads the live heap after
// every collection (a finalizer on a sentinel the collection frees), so
// the percent follows the heap as it grows and shrinks; it holds no
// goroutine of its own.
func Keep(floor uint64) (stop func()) {
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(gogc)
	prev := int(gogc[0].Value.Uint64())
	samples := []metrics.Sample{ // this Keep's: metrics.Read writes into them
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"},
	}
	var (
		mu      sync.Mutex // a tune in progress cannot outlive stop
		stopped bool
		arm     func()
	)
	tune := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		metrics.Read(samples)
		debug.SetGCPercent(Percent(samples[0].Value.Uint64(), samples[1].Value.Uint64()+samples[2].Value.Uint64(), floor))
		arm()
	}
	arm = func() {
		// Larger than the tiny allocator's 16-byte blocks, whose
		// finalizers may never run.
		s := new([4]*byte)
		runtime.SetFinalizer(s, func(*[4]*byte) { tune() })
	}
	// Nothing is live yet to read; the first collection corrects this.
	debug.SetGCPercent(Percent(0, 1, floor))
	arm()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			stopped = true
			debug.SetGCPercent(prev)
		}
	}
}

// Default is the floor `idemcheck serve` keeps, and the replay floor with
// it: four times Go's own minimum (docs/performance.md).
const Default = 16 << 20

// KeepUnlessSet is Keep, unless the environment sets GOGC (to any value,
// even empty): a user's choice of collector target stands.
func KeepUnlessSet(floor uint64) (stop func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	return Keep(floor)
}

package minheap

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const mb = 1 << 20

// TestPercent: each case is a rule of the goal Go computes from the percent.
func TestPercent(t *testing.T) {
	for _, c := range []struct {
		rule              string
		live, scan, floor uint64
		want              int
	}{
		{"nothing read yet: the runtime's minimum alone reaches the floor", 0, 1, 16 * mb, 400},
		{"a small heap: the minimum term is the smaller percent that reaches the floor", 1 * mb, 1 * mb, 16 * mb, 400},
		{"a mid heap: the goal term reaches the floor first", 6 * mb, 1 * mb, 16 * mb, 142},
		{"the default goal already at the floor: Go's default", 8 * mb, 0, 16 * mb, 100},
		{"a heap past the floor: Go's default", 40 * mb, 1 * mb, 16 * mb, 100},
		{"the default goal just short of the floor: a little above the default", 7 * mb, 1 * mb, 16 * mb, 112},
		{"the default goal exactly at the floor: Go's default", 7 * mb, 2 * mb, 16 * mb, 100},
		{"a floor at or under Go's own minimum changes nothing", 0, 1, 4 * mb, 100},
	} {
		if got := Percent(c.live, c.scan, c.floor); got != c.want {
			t.Errorf("%s: Percent(%d, %d, %d) = %d, want %d", c.rule, c.live, c.scan, c.floor, got, c.want)
		}
	}
}

func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// waitPercent collects until the finalizer has set want, within a second.
func waitPercent(t *testing.T, want int) {
	t.Helper()
	for range 100 {
		runtime.GC()
		if gcPercent() == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("GC percent %d, want %d", gcPercent(), want)
}

// TestKeepFollowsTheHeap: the percent is raised while the heap is small,
// falls to Go's default while a large heap is live, rises again once it
// is freed, and stop restores the percent Keep found and ends the tuning.
func TestKeepFollowsTheHeap(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	stop := Keep(16 * mb)
	if got := gcPercent(); got != 400 {
		t.Fatalf("at start: GC percent %d, want 400", got)
	}
	big := make([]*[1024]byte, 12*1024)
	for i := range big {
		big[i] = new([1024]byte)
	}
	waitPercent(t, 100)
	runtime.KeepAlive(big)
	big = nil
	waitPercent(t, 400)

	stop()
	if got := gcPercent(); got != 100 {
		t.Fatalf("after stop: GC percent %d, want the 100 Keep found", got)
	}
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := gcPercent(); got != 100 {
		t.Fatalf("collections after stop: GC percent %d, want 100 (tuning ended)", got)
	}
	stop() // a second stop changes nothing
}

// TestKeepUnlessSet: a GOGC in the environment, even empty, is the
// user's; Keep runs only where it is unset.
func TestKeepUnlessSet(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	for _, env := range []string{"150", ""} {
		t.Setenv("GOGC", env)
		stop := KeepUnlessSet(Default)
		if got := gcPercent(); got != 100 {
			t.Errorf("GOGC=%q: GC percent %d, want the 100 left as it was", env, got)
		}
		stop()
	}
	os.Unsetenv("GOGC") // t.Setenv puts the test's own value back
	stop := KeepUnlessSet(Default)
	defer stop()
	if got := gcPercent(); got != 400 {
		t.Errorf("GOGC unset: GC percent %d, want 400", got)
	}
}

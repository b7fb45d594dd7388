package chaos

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// TestDeadlines checks the coarse re-arming: a deadline within 1/32 of its
// span of the wanted one is kept, any other is set, exact sets always land,
// and an armed deadline still ends a blocked read.
func TestDeadlines(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var d deadlines

	d.armRead(a, time.Minute)
	first := d.read
	d.armRead(a, time.Minute)
	if !d.read.Equal(first) {
		t.Errorf("re-armed within the slack: %v then %v", first, d.read)
	}
	d.armRead(a, 2*time.Minute)
	if d.read.Sub(first) < 50*time.Second {
		t.Errorf("kept a deadline a minute short: %v then %v", first, d.read)
	}
	d.setRead(a, time.Time{})
	d.armRead(a, time.Minute)
	if d.read.IsZero() {
		t.Error("a cleared deadline was not re-armed")
	}
	d.arm(a, time.Minute)
	if d.write.IsZero() || d.read.Sub(d.write) > 2*time.Second || d.write.Sub(d.read) > 2*time.Second {
		t.Errorf("arm: read %v, write %v", d.read, d.write)
	}

	d.armRead(a, 30*time.Millisecond)
	start := time.Now()
	_, err := a.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after armRead(30ms): %v, want a deadline error", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("read ended after %v", el)
	}
}

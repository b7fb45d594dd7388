package chaos

import (
	"fmt"
	"testing"
)

// TestAttemptCounts: attempt numbers count per key, survive one
// generation change, and memory stays within two generations.
func TestAttemptCounts(t *testing.T) {
	a := newAttemptCounts(4)
	if n := a.next("k"); n != 1 {
		t.Fatalf("first attempt = %d, want 1", n)
	}
	if n := a.next("k"); n != 2 {
		t.Fatalf("second attempt = %d, want 2", n)
	}
	for i := range 5 { // k moves to the old generation
		a.next(fmt.Sprint("other-", i))
	}
	if n := a.next("k"); n != 3 {
		t.Fatalf("attempt after a generation change = %d, want 3 (numbering kept)", n)
	}
	for i := range 1000 {
		a.next(fmt.Sprint("many-", i))
		if got := len(a.cur) + len(a.old); got > 2*a.max {
			t.Fatalf("%d keys remembered, want at most %d", got, 2*a.max)
		}
	}
	if n := a.next("k"); n != 1 {
		t.Fatalf("attempt of a key forgotten two generations ago = %d, want 1", n)
	}
}

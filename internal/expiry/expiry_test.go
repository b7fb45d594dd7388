package expiry

import (
	"testing"
	"time"
)

// TestSentInside: the window is judged by the send time against TTL −
// margin; no TTL means no expiry.
func TestSentInside(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name        string
		sent        time.Time
		ttl, margin time.Duration
		want        bool
	}{
		{"no ttl", ms(1e9), 0, 500 * time.Millisecond, true},
		{"early", ms(500), 2 * time.Second, 500 * time.Millisecond, true},
		{"at ttl − margin", ms(1500), 2 * time.Second, 500 * time.Millisecond, true},
		{"inside the margin", ms(1501), 2 * time.Second, 500 * time.Millisecond, false},
		{"after the ttl", ms(2500), 2 * time.Second, 0, false},
	} {
		if got := SentInside(t0, tc.sent, tc.ttl, tc.margin); got != tc.want {
			t.Errorf("%s: SentInside(+%s, ttl %s, margin %s) = %v, want %v", tc.name, tc.sent.Sub(t0), tc.ttl, tc.margin, got, tc.want)
		}
	}
}

package wire

import (
	"testing"
	"time"
)

// TestParseLifetime: an advertised lifetime is an ISO 8601 duration, a Go
// duration or seconds, and positive.
func TestParseLifetime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"PT3S", 3 * time.Second, true},
		{"PT1H", time.Hour, true},
		{"P1D", 24 * time.Hour, true},
		{"P1DT2H30M", 26*time.Hour + 30*time.Minute, true},
		{"PT0.5S", 500 * time.Millisecond, true},
		{"pt10m", 10 * time.Minute, true},
		{"24h", 24 * time.Hour, true},
		{"86400", 24 * time.Hour, true},
		{"P", 0, false},
		{"PT", 0, false},
		{"P1Y", 0, false}, // a year has no fixed length
		{"0", 0, false},
		{"soon", 0, false},
	} {
		got, err := ParseLifetime(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("rule: %q -> %s, %v; want %s (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

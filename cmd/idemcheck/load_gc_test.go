package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestTuneLoadGC: load raises the collector's target only where GOGC is
// not set; a user's GOGC (any value) is left as it is.
func TestTuneLoadGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	for _, c := range []struct {
		rule  string
		unset bool
		env   string
		want  int
	}{
		{"GOGC unset: the load target", true, "", loadGCPercent},
		{"GOGC set: the user's choice stands", false, "150", 100},
		{"GOGC set empty: still the user's", false, "", 100},
	} {
		t.Run(c.rule, func(t *testing.T) {
			if c.unset {
				old, had := os.LookupEnv("GOGC")
				os.Unsetenv("GOGC")
				if had {
					t.Cleanup(func() { os.Setenv("GOGC", old) })
				}
			} else {
				t.Setenv("GOGC", c.env)
			}
			debug.SetGCPercent(100)
			tuneLoadGC()
			if got := debug.SetGCPercent(100); got != c.want {
				t.Fatalf("GC percent %d, want %d", got, c.want)
			}
		})
	}
}

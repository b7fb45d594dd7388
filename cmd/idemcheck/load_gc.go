package main

import (
	"os"
	"runtime/debug"
)

// loadGCPercent is the collector's target while `idemcheck load` runs,
// unless GOGC says otherwise. A load generator's live heap is small and
// bounded (histograms, a sum per key) while every request allocates, so at
// Go's default of 100 the collector ran every few milliseconds: 12 % of the
// client's CPU over gRPC at saturation (perf). At 400 a gRPC call costs
// about a fifth less CPU and an HTTP request 9-14 % less, for about 11 MB
// more resident memory (docs/performance.md).
// The load library leaves the setting alone: it is the process's to choose.
const loadGCPercent = 400

// tuneLoadGC applies loadGCPercent when the environment does not set GOGC.
func tuneLoadGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(loadGCPercent)
	}
}

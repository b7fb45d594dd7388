package main

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos/drive"
	"github.com/idemcheck/idemcheck/internal/progress"
	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/scenarios"
)

// runProgress hooks progress into a conformance run: instances done of
// planned, failures so far and an ETA from the longest wait no instance
// can skip (they run concurrently). With verbose each result is also
// printed as it finishes. The returned stop clears the line.
func runProgress(stdout, stderr io.Writer, verbose bool, rules *scenarios.Report, target *apispec.Target,
	profile *apispec.Profile, planned []scenarios.Planned, opts *scenarios.RunOptions) (stop func()) {
	var done, failing atomic.Int64
	start := time.Now()
	longest := scenarios.LongestWait(target, profile, planned)
	line := progress.Start(stderr, stdout, verbose, func() string {
		return fmt.Sprintf("run: %d/%d instances, %d failing, %s", done.Load(), len(planned), failing.Load(),
			progress.ETA(longest-time.Since(start)))
	})
	opts.OnResult = func(r scenarios.Result) {
		done.Add(1)
		if v := rules.Effective(r); v.Status == scenarios.Fail && !v.Expected {
			failing.Add(1)
		}
		if verbose {
			line.Println(fmt.Sprintf("  %-12s %s (%s)", r.Status, r.Name(), r.Duration.Round(time.Millisecond)))
		}
	}
	return line.Stop
}

// chaosProgress shows operations done, faults injected and the
// violations of the finished operations so far, by the final check's rules
// (which runs over the whole history at the end).
func chaosProgress(stdout, stderr io.Writer, verbose bool, ops int) (drive.Option, func()) {
	var (
		mu   sync.Mutex
		last drive.Progress
	)
	start := time.Now()
	line := progress.Start(stderr, stdout, verbose, func() string {
		mu.Lock()
		p := last
		mu.Unlock()
		return fmt.Sprintf("chaos: %d/%d operations, %d faults injected, %d violations so far (the final check's rules; it runs over the whole history at the end), %s",
			p.Done, ops, p.Faults, p.Violations, time.Since(start).Round(time.Second))
	})
	if line == nil {
		return drive.WithProgress(nil), line.Stop
	}
	opt := drive.WithProgress(func(p drive.Progress) {
		mu.Lock()
		last = p
		mu.Unlock()
	})
	return opt, line.Stop
}

// loadProgress shows the phase, elapsed time, achieved rate, p99 so far
// and errors.
func loadProgress(stdout, stderr io.Writer, verbose bool) (load.Option, func()) {
	var (
		mu   sync.Mutex
		last load.Progress
		seen bool
	)
	line := progress.Start(stderr, stdout, verbose, func() string {
		mu.Lock()
		p, ok := last, seen
		mu.Unlock()
		if !ok {
			return "load: warming up"
		}
		planned := ""
		if p.Planned > 0 {
			planned = fmt.Sprintf("/%d", p.Planned)
		}
		rate := 0.0
		if p.Elapsed > 0 {
			rate = float64(p.Sent) / p.Elapsed.Seconds()
		}
		return fmt.Sprintf("load: [%d/%d %s] %s/%s, %d%s requests, %.0f/s achieved, p99 %s, %d errors",
			p.Index, p.Phases, p.Phase, p.Elapsed.Round(time.Second), p.Duration, p.Sent, planned, rate,
			p.P99.Round(10*time.Microsecond), p.Errors)
	})
	if line == nil {
		return load.WithProgress(nil), line.Stop
	}
	opt := load.WithProgress(func(p load.Progress) {
		mu.Lock()
		last, seen = p, true
		mu.Unlock()
	})
	return opt, line.Stop
}

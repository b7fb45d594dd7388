package idemchecktest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/target"
)

// Config names what to test, as the CLI's flags do: a YAML config (Config),
// the URL of a server following the reference contract (Target), a
// command that starts one (TargetCmd), a profile preset (Profile; empty:
// the config's, else ietf), TTL and Lease overrides.
type Config = scenarios.Selection

// Option tunes a run.
type Option func(*options)

type options struct {
	run             scenarios.RunOptions
	profile         *target.Profile
	allowIncomplete bool
	onReport        func(*scenarios.Report)
}

// Strict makes an unmet SHOULD (warn) fail its subtest.
func Strict() Option { return func(o *options) { o.run.Strict = true } }

// AllowIncomplete lets a MUST-level instance without evidence
// (unverifiable, inconclusive) skip instead of failing.
func AllowIncomplete() Option { return func(o *options) { o.allowIncomplete = true } }

// Only selects instances by glob over "family/case@operation" and the
// case ID (doublestar syntax, as the CLI's --run).
func Only(globs ...string) Option {
	return func(o *options) { o.run.Run = append(o.run.Run, globs...) }
}

// Exclude leaves out instances matching a glob (the CLI's --skip).
func Exclude(globs ...string) Option {
	return func(o *options) { o.run.Skip = append(o.run.Skip, globs...) }
}

// KnownFailing lists globs of instances expected to fail: their failure
// skips, and one that passes fails (the CLI's --known-failing).
func KnownFailing(globs ...string) Option {
	return func(o *options) { o.run.KnownFailing = append(o.run.KnownFailing, globs...) }
}

// WithProfile replaces the configured profile with p (e.g. a preset with
// overrides).
func WithProfile(p *target.Profile) Option { return func(o *options) { o.profile = p } }

// Parallel bounds the instances running at once (default: all).
func Parallel(n int) Option { return func(o *options) { o.run.Parallel = n } }

// OnReport receives the engine's report once every subtest has reported,
// e.g. to write reports.JSON or reports.HTML from go test.
func OnReport(f func(*scenarios.Report)) Option { return func(o *options) { o.onReport = f } }

// Run checks the target cfg names, one subtest per selected instance.
func Run(t *testing.T, cfg Config, opts ...Option) {
	t.Helper()
	target, profile, err := cfg.Load()
	if err != nil {
		t.Fatalf("idemcheck: %v", err)
	}
	check(t, target, profile, opts)
}

// Handler serves h on a loopback httptest server for the duration of the
// test and checks it like Run. cfg.Config, when set, describes the API
// (its base_url is replaced by the server's); otherwise h follows the
// reference contract (idemcheck serve). cfg.Target must be empty.
func Handler(t *testing.T, h http.Handler, cfg Config, opts ...Option) {
	t.Helper()
	if cfg.Target != "" {
		t.Fatalf("idemcheck: Handler serves h itself: leave Config.Target empty (got %q)", cfg.Target)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if cfg.Config == "" {
		cfg.Target = srv.URL
	}
	target, profile, err := cfg.Load()
	if err != nil {
		t.Fatalf("idemcheck: %v", err)
	}
	target.BaseURL = srv.URL
	check(t, target, profile, opts)
}

// slot is where one instance's result waits for its subtest.
type slot struct {
	done chan struct{}
	once sync.Once
	res  scenarios.Result
}

func (s *slot) release() { s.once.Do(func() { close(s.done) }) }

func check(t *testing.T, target *target.Target, profile *target.Profile, opts []Option) {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.profile != nil {
		profile = o.profile
	}
	planned, err := scenarios.Plan(target, profile, o.run)
	if err != nil {
		t.Fatalf("idemcheck: %v", err)
	}
	if len(planned) == 0 {
		t.Fatal("idemcheck: Only/Exclude select no case instance")
	}
	// The report whose rules (Strict, AllowIncomplete) judge each result.
	rules := &scenarios.Report{Strict: o.run.Strict, AllowIncomplete: o.allowIncomplete}
	var (
		mu       sync.Mutex
		selected []string
		runErr   error
	)
	slots := map[string]*slot{}
	// Each subtest records that go test selected it, then waits (as a
	// parallel subtest, after this function returns) for its result.
	for _, p := range planned {
		s := &slot{done: make(chan struct{})}
		slots[p.Name()] = s
		name := p.Name()
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			selected = append(selected, name)
			mu.Unlock()
			t.Parallel()
			<-s.done
			mu.Lock()
			err := runErr
			mu.Unlock()
			if err != nil {
				t.Fatalf("idemcheck: %v", err)
			}
			// go test times a parallel subtest from when -parallel lets it
			// resume, often after its instance has finished (0.00s): the
			// engine's own time for the instance is logged instead.
			t.Logf("%s in %s (engine time)", s.res.Status, s.res.Duration.Round(time.Millisecond))
			report(t, Decide(rules, s.res))
		})
	}
	mu.Lock()
	names := append([]string(nil), selected...)
	mu.Unlock()
	if len(names) == 0 {
		return // go test -run filtered every instance out
	}
	ro := o.run
	ro.Run, ro.Skip = nil, nil
	for _, name := range names {
		ro.Run = append(ro.Run, escapeGlob(name))
	}
	ro.OnResult = func(r scenarios.Result) {
		if s := slots[r.Name()]; s != nil {
			s.res = r
			s.release()
		}
	}
	finished := make(chan struct{})
	// Cleanups run last-in first-out: the engine is done before the
	// httptest server of Handler closes.
	t.Cleanup(func() { <-finished })
	go func() {
		defer close(finished)
		rep, err := scenarios.Run(t.Context(), target, profile, ro)
		if err != nil {
			mu.Lock()
			runErr = err
			mu.Unlock()
		}
		// Release every subtest whose result never came (an error).
		for _, name := range names {
			slots[name].release()
		}
		if rep != nil && o.onReport != nil {
			rep.AllowIncomplete = o.allowIncomplete
			o.onReport(rep)
		}
	}()
}

func report(t *testing.T, d Decision) {
	t.Helper()
	switch {
	case d.Fail:
		t.Error("\n" + d.Text)
	case d.Skip:
		t.Skip(d.Text)
	case d.Text != "":
		t.Log("\n" + d.Text)
	}
}

// Decision is how one instance shows in a test framework.
type Decision struct {
	// Fail: the instance fails the run; Text is its evidence.
	Fail bool
	// Skip: nothing was established (or a failure was expected); Text is
	// the reason.
	Skip bool
	// Text is the evidence, the reason, or for a pass a note worth
	// logging (an unmet SHOULD outside strict mode).
	Text string
}

// Decide reads one result under the run's rules (scenarios.Report.Effective,
// the rule behind the CLI's exit code): rep carries Strict and
// AllowIncomplete. Run, Handler and the Ginkgo suite all use it.
func Decide(rep *scenarios.Report, r scenarios.Result) Decision {
	v := rep.Effective(r)
	evidence := func() string {
		text := reports.FailureText(r, "  ")
		if v.Note != "" {
			text += "  note:        " + v.Note + "\n"
		}
		return text
	}
	switch {
	case v.Expected:
		return Decision{Skip: true, Text: v.Note}
	case v.Status == scenarios.Fail, v.Incomplete, v.Status == scenarios.Interrupted:
		return Decision{Fail: true, Text: evidence()}
	case v.Status == scenarios.Warn:
		return Decision{Text: "SHOULD unmet (Strict makes it fail):\n" + evidence()}
	case v.Status == scenarios.Skip, v.Status == scenarios.Unverifiable, v.Status == scenarios.Inconclusive:
		return Decision{Skip: true, Text: string(r.Status) + ": " + r.Reason}
	}
	return Decision{}
}

// globMeta are the characters doublestar gives a meaning; a name is
// selected exactly by escaping them.
const globMeta = `*?[]{}\`

// escapeGlob is a glob matching exactly s.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(globMeta, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

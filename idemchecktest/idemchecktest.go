package idemchecktest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
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
	profile         *apispec.Profile
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
func WithProfile(p *apispec.Profile) Option { return func(o *options) { o.profile = p } }

// Parallel bounds the instances running at once (default: all).
func Parallel(n int) Option { return func(o *options) { o.run.Parallel = n } }

// OnReport receives the engine's report once every subtest has reported,
// e.g. to write reports.JSON or reports.HTML from go test.
func OnReport(f func(*scenarios.Report)) Option { return func(o *options) { o.onReport = f } }

// Run checks the target cfg names, one subtest per selected instance.
func Run(t *testing.T, cfg Config, opts ...Option) {
	t.Helper()
	spec, profile, err := cfg.Load()
	if err != nil {
		t.Fatalf("idemcheck: %v", err)
	}
	check(t, spec, profile, nil, opts)
}

// Handler serves h on a loopback httptest server for the duration of the
// test and checks it like Run. cfg.Config, when set, describes the API
// (its base_url may be left out: the server's replaces it); otherwise h
// follows the reference contract (idemcheck serve). cfg.Target must be
// empty.
//
// Besides the server, the same-key burst calls h directly from goroutines
// released together, with no network between them: a check-then-act race
// in h (look the key up, execute, store) shows far more often than over
// loopback.
func Handler(t *testing.T, h http.Handler, cfg Config, opts ...Option) {
	t.Helper()
	if cfg.Target != "" {
		t.Fatalf("idemcheck: Handler serves h itself: leave Config.Target empty (got %q)", cfg.Target)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if cfg.Config == "" {
		cfg.Target = srv.URL
	} else {
		cfg.BaseURL = srv.URL
	}
	spec, profile, err := cfg.Load()
	if err != nil {
		t.Fatalf("idemcheck: %v", err)
	}
	spec.BaseURL = srv.URL
	check(t, spec, profile, h, opts)
}

// slot is where one instance's result waits for its subtest.
type slot struct {
	done chan struct{}
	once sync.Once
	res  scenarios.Result
}

func (s *slot) release() { s.once.Do(func() { close(s.done) }) }

func check(t *testing.T, target *apispec.Target, profile *apispec.Profile, inproc http.Handler, opts []Option) {
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
				// The parent test carries the error, once.
				t.Skip("idemcheck: not run: the engine stopped before any case (the parent test's failure says why)")
			}
			// go test times a parallel subtest from when -parallel lets it
			// resume, often after its instance has finished (0.00s): the
			// engine's own time for the instance is logged instead.
			t.Logf("%s in %s (engine time)", s.res.Status, s.res.Duration.Round(time.Millisecond))
			d := Decide(rules, s.res)
			if d.Fail && rules.Effective(s.res).Incomplete {
				d.Text += seeAlso(rules, s.res, slots)
			}
			report(t, d)
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
	ro.InProcess = inproc
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
			// E.g. the setup does not work (evidence.ErrNotWorking): one
			// line per operation, on the parent, before any subtest ends.
			t.Errorf("idemcheck: %v", err)
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
		// The CLI's words for where every exchange is kept, in a test's.
		text := strings.ReplaceAll(reports.FailureText(r, "  "), "in the JSON report", "in the report idemchecktest.OnReport receives")
		if note := testNote(rep, r, v); note != "" {
			text += "  note:        " + note + "\n"
		}
		if a := scenarios.Advice(r); v.Incomplete && a != "" && !seeCase.MatchString(r.Reason) {
			text += "  to decide:   " + a + "\n"
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

// testNote is v's note in a test's terms (the CLI's speaks of exit codes
// and flags).
func testNote(rep *scenarios.Report, r scenarios.Result, v scenarios.Effective) string {
	switch {
	case v.Incomplete:
		return "MUST without evidence: a MUST that could not be checked fails the test, as one that fails would pass it unseen (idemchecktest.AllowIncomplete() makes it skip instead)"
	case r.Status == scenarios.Warn && rep.Strict && r.Level != scenarios.Must:
		return "SHOULD unmet; idemchecktest.Strict() makes it a failure"
	}
	return v.Note
}

// seeCase finds the case a reason points at ("(see missing/rejected)").
var seeCase = regexp.MustCompile(`see ([a-z0-9-]+/[a-z0-9-]+)`)

// seeAlso says, for a MUST without evidence whose reason points at
// another case of its operation, what that case concluded in this run
// (waiting for it): the explanation a reader looks for next.
func seeAlso(rules *scenarios.Report, r scenarios.Result, slots map[string]*slot) string {
	m := seeCase.FindStringSubmatch(r.Reason)
	if m == nil {
		return ""
	}
	name := m[1]
	if r.Operation != "" {
		name += "@" + r.Operation
	}
	s := slots[name]
	if s != nil {
		<-s.done
	}
	if s == nil || s.res.Status == "" { // not selected, or filtered out by go test -run
		return "  see:         " + name + " did not run in this test: run it to see why\n"
	}
	other := s.res
	what := other.Observed
	if what == "" {
		what = other.Reason
	}
	d := Decide(rules, other)
	how := "its subtest passes"
	switch {
	case d.Fail:
		how = "its subtest fails"
	case d.Skip:
		how = "its subtest skips"
	case other.Status == scenarios.Warn:
		how = "its subtest passes and logs it (a SHOULD unmet; idemchecktest.Strict() makes it fail)"
	}
	return fmt.Sprintf("  see:         %s %s [%s]: %s; %s\n", name, other.Status, other.Level, what, how)
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

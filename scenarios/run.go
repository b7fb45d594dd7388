package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/internal/managed"
	"github.com/idemcheck/idemcheck/wire"
)

// RunOptions select and tune a run.
type RunOptions struct {
	// Run and Skip are globs over Result.Name() ("family/case@operation")
	// and the case ID in doublestar syntax: '*' matches within a segment,
	// a '**' segment across segments ("**/*@refunds"), {a,b} alternatives.
	// Empty Run selects everything.
	Run, Skip []string
	// Strict turns Warn (an unmet SHOULD) into a run failure.
	Strict bool
	// Seed, when not zero, shuffles the start order reproducibly.
	Seed uint64
	// Parallel bounds concurrently running case instances (0: all).
	Parallel int
	// KnownFailing are globs of cases expected to fail; one that passes
	// fails the run so the list cannot go stale.
	KnownFailing []string
	// OnResult is called once per finished case instance, never concurrently.
	OnResult func(Result)
	// OnNote is called with each Report.Notes line as soon as it is known
	// (before the first case starts).
	OnNote func(string)
	// Attempts bounds the tries of a case instance whose verdict is a
	// missed timing (Env.Missed: an overlap missed, a stall past the TTL
	// or the lease); each try uses fresh keys. 0 is DefaultAttempts, 1
	// never tries again. Only such inconclusives are tried again: a pass,
	// a fail or any other verdict is final.
	Attempts int
	// InProcess, when set, is the handler served at the target's base URL
	// (the go-test face's Handler): same-key bursts call it directly from
	// goroutines released together (wire.InProcess), with no network
	// between them, and run alone after the other cases.
	InProcess http.Handler
}

// DefaultAttempts is RunOptions.Attempts' default: on a busy machine a
// stall that misses one overlap seldom misses three.
const DefaultAttempts = 3

func (o RunOptions) attempts() int {
	if o.Attempts <= 0 {
		return DefaultAttempts
	}
	return o.Attempts
}

// Run executes the selected catalog against t. Cases run concurrently: each
// uses its own fresh keys and per-key oracle counters, so the run takes
// about as long as its slowest case. A global (not per-key) oracle forces a
// serial run: a case reads the counter around each of its keys' requests
// (Env.Executions), and a concurrent case would move it in between. Almost
// every case counts effects, so a shared mode for the others would save
// little; serial is the simple honest choice (docs/conformance-engine.md
// has the run time). Before the cases, the oracle is checked once per
// operation (calibrate); a problem becomes a Report note and makes the
// instances that count effects inconclusive. A nil p is the default
// profile (ietf).
func Run(ctx context.Context, t *apispec.Target, p *apispec.Profile, o RunOptions) (*Report, error) {
	t = t.WithDefaults()
	if p == nil {
		p, _ = apispec.ProfileByName(apispec.DefaultProfile) // a preset: never an error
	}
	ins, err := plan(t, p, o)
	if err != nil {
		return nil, err
	}
	known, err := compileGlobs("known-failing", o.KnownFailing)
	if err != nil {
		return nil, err
	}
	d, err := evidence.StartDownstream(ctx, t)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var proc *managed.Process
	if t.Command != "" {
		mt, m, err := managed.Start(ctx, t, d.URL())
		if err != nil {
			return nil, err
		}
		defer m.Stop()
		t, proc = mt, m
	}
	// One carrier for the run's requests to the target; client is the
	// HTTP client under it (an HTTP target's) and of the evidence.
	client := wire.Client(t, t.Timeout+p.MaxBlock)
	defer client.CloseIdleConnections() // no keep-alive goroutines outlive the run
	carrier := wire.NewCarrier(t, client)
	defer carrier.Close()
	proto, err := wire.Preflight(ctx, t, carrier, client)
	if err != nil {
		return nil, err
	}
	p, keyNotes := keyFieldProfile(ctx, t, p, carrier)
	if t.TTLFrom != nil || keyNotes != nil {
		// The TTL the API advertises, and the key field's annotations,
		// are known only now: the cases are planned again with them.
		if ins, err = plan(t, p, o); err != nil {
			return nil, err
		}
	}
	ev, err := evidence.Open(ctx, t, client, d)
	if err != nil {
		return nil, err
	}
	defer ev.Close()
	// The profile's key_format generator is the client-generated default;
	// --hash-keys and key_source override it.
	keys := wire.NewKeys(t, client, func(uint64) string { return p.NewKey() })
	s := &session{t: t, p: p, carrier: carrier, timeout: client.Timeout, ev: ev, double: d, keys: keys, inproc: o.InProcess, proc: proc, severalEvents: map[string]bool{}}
	shuffle(ins, o.Seed)
	rep := &Report{Target: t.Redact(t.BaseURL), Profile: p.Name, Protocol: proto, Strict: o.Strict, Seed: o.Seed, Started: time.Now()}
	// No verdict is drawn on a target whose normal request fails.
	if err := evidence.CheckNormal(ctx, t, carrier, d, keys, sentOps(t, ins)); err != nil {
		return nil, err
	}
	idNotes, err := checkIDPointers(ctx, s, ins)
	if err != nil {
		return nil, err
	}
	if len(idNotes) > 0 {
		// An operation learned to be an update has other evidence: its
		// cases' supplies and skips are planned again.
		if ins, err = plan(s.t, p, o); err != nil {
			return nil, err
		}
		shuffle(ins, o.Seed)
	}
	problems, notes := calibrate(ctx, s, ins)
	notes = append(idNotes, notes...)
	var outboxNotes []string
	s.eventProblems, outboxNotes = calibrateOutbox(ctx, s, ins)
	notes = append(notes, outboxNotes...)
	parallel := o.Parallel
	if parallel <= 0 || parallel > len(ins) {
		parallel = len(ins)
	}
	if ev != nil && !ev.PerKey() { // known once calibrated: a downstream double may have turned global
		parallel = 1
	}
	notes = append(append(keyNotes, notes...), runNotes(t, rep, ins)...)
	if t.KeySeed != "" && t.KeySource == nil {
		// Printed so that a run can be repeated with the same keys.
		notes = append([]string{fmt.Sprintf("keys are business-id hashes SHA-256(%s:n) (--key-seed %s repeats them)", t.KeySeed, t.KeySeed)}, notes...)
	}
	for _, n := range notes {
		rep.Notes = append(rep.Notes, n)
		if o.OnNote != nil {
			o.OnNote(n)
		}
	}
	results := runInstances(ctx, s, ins, problems, o, known, parallel)
	sort.Slice(results, func(i, j int) bool { return results[i].Name() < results[j].Name() })
	rep.Results = results
	rep.Duration = time.Since(rep.Started)
	rep.LeftOut = leftOutMust(t, p, o, ins)
	// Interrupted only when an instance was cut short or never ran: a
	// context ended after the last verdict (a test's, say) took nothing.
	rep.Interrupted = slices.ContainsFunc(results, func(r Result) bool { return r.Status == Interrupted })
	return rep, nil
}

// shuffle orders ins by seed (0: as planned).
func shuffle(ins []instance, seed uint64) {
	if seed != 0 {
		r := rand.New(rand.NewPCG(seed, 0x1dc))
		r.Shuffle(len(ins), func(i, j int) { ins[i], ins[j] = ins[j], ins[i] })
	}
}

// runNotes are the start-up notes on t's declared TTL (the instances it
// is too short for, recorded in rep).
func runNotes(t *apispec.Target, rep *Report, ins []instance) []string {
	var notes []string
	if names, need := ttlSkips(ins); len(names) > 0 {
		rep.TTLSkipped, rep.NeedsTTL = len(names), need
		notes = append(notes, fmt.Sprintf("declared ttl %s is too short for %d case instances, skipped (%s): a ttl ≥ %s runs them all (--ttl, and the same TTL in the deployment)",
			t.TTL, len(names), strings.Join(names, ", "), need))
	}
	return notes
}

// runInstances runs ins, parallel at a time, then those that must run
// alone (cases that kill the managed target, in-process bursts), and
// returns their results in ins' order.
func runInstances(ctx context.Context, s *session, ins []instance, problems map[string]string, o RunOptions, known []string, parallel int) []Result {
	results := make([]Result, len(ins))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	var cbMu sync.Mutex
	runOne := func(i int) {
		res := runInstance(ctx, s, ins[i], problems, o.attempts())
		res.KnownFailing = matchAny(known, res.Name(), res.ID)
		results[i] = res
		if o.OnResult != nil {
			cbMu.Lock()
			o.OnResult(res)
			cbMu.Unlock()
		}
	}
	for i := range ins {
		if killsTarget(ins[i]) || runsAlone(o.InProcess, ins[i]) {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			runOne(i)
		})
	}
	wg.Wait()
	// Cases that kill the managed target run alone, after the others, as
	// do in-process bursts (runsAlone).
	for i := range ins {
		if killsTarget(ins[i]) || runsAlone(o.InProcess, ins[i]) {
			runOne(i)
		}
	}
	return results
}

// ttlSkips names the instances skipped for a declared TTL too short
// (Case.MinTTL) and the least TTL that runs them all.
func ttlSkips(ins []instance) (names []string, need time.Duration) {
	for _, in := range ins {
		if in.NeedsTTL > 0 {
			names = append(names, in.Name())
			need = max(need, in.NeedsTTL)
		}
	}
	return names, need
}

// leftOutMust names the MUST-level instances of the whole catalog that
// the run's --run/--skip globs left out of ins; an opt-in requirement's
// instances the config does not ask for, and those that do not apply to
// the target (a gRPC one: replay/key-field-spelling), are no part of its
// catalog.
func leftOutMust(t *apispec.Target, p *apispec.Profile, o RunOptions, ins []instance) []string {
	if len(o.Run) == 0 && len(o.Skip) == 0 {
		return nil
	}
	all, err := plan(t, p, RunOptions{})
	if err != nil {
		return nil // no globs: plan cannot fail
	}
	selected := map[string]bool{}
	for _, in := range ins {
		selected[in.Name()] = true
	}
	var out []string
	for _, in := range all {
		if in.Level == Must && !selected[in.Name()] && !optInMissing(in.Missing) && !strings.HasPrefix(in.Skip, NotApplicable) {
			out = append(out, in.Name())
		}
	}
	return out
}

// killsTarget reports an instance that will take the managed target down.
func killsTarget(in instance) bool {
	return in.Supplied && slices.Contains(in.c.Needs, NeedTargetCmd)
}

// caseBudget bounds one case instance: its longest legitimate wait plus
// room for its requests.
func caseBudget(t *apispec.Target, p *apispec.Profile) time.Duration {
	return 3*t.Timeout + t.TTL + t.Lease + p.MaxBlock + p.Grace + 10*time.Second
}

func runInstance(ctx context.Context, s *session, in instance, oracleProblems map[string]string, attempts int) (res Result) {
	res = Result{Meta: in.Meta, Operation: in.Operation}
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	if !in.Supplied {
		res.Missing = in.Missing
		// Unverifiable only when counting executions is all it lacks: a
		// case that also needs replicas (or a slow variant) is not tested,
		// whatever the oracle.
		onlyEffects := !slices.ContainsFunc(in.Missing, func(n Need) bool { return n != NeedOracle && n != NeedEffects })
		if onlyEffects {
			n := in.Missing[0]
			res.Status, res.Reason = Unverifiable, "needs "+string(n)+": configure an oracle or an id_pointer to tell a replay from a re-execution"
			return res
		}
		names := make([]string, len(in.Missing))
		for i, n := range in.Missing {
			names[i] = string(n)
		}
		res.Status, res.Reason = Skip, "config does not supply: "+strings.Join(names, ", ")
		return res
	}
	if in.Skip != "" {
		res.Status, res.Reason = Skip, in.Skip
		return res
	}
	if ctx.Err() != nil {
		res.Status, res.Reason = Interrupted, "not started: the run was interrupted"
		return res
	}
	parent := ctx
	defer func() {
		// The caller's context ended while the case ran (SIGINT, its
		// deadline): whatever the case concluded may come from requests cut
		// short, so it is not judged. The case's own budget running out is
		// not that: its verdict stands.
		if parent.Err() != nil {
			had := string(res.Status)
			if res.Reason != "" {
				had += ": " + res.Reason
			}
			res.Status, res.Reason = Interrupted, "cut short by the interruption, not judged (the case had said "+had+")"
		}
	}()
	if problem := s.eventProblems[in.Operation]; problem != "" && slices.Contains(in.c.Needs, NeedEvents) {
		res.Status, res.Reason = Inconclusive, problem
		return res
	}
	if countsEffects(in.c) && in.op != nil {
		// A problem on another operation the case touches is not the
		// case's: it judges those requests by their own evidence (ids)
		// where the oracle does not see them (Env.oracleSees).
		if problem := oracleProblems[in.op.Name]; problem != "" && !(s.severalEvents[in.op.Name] && slices.Contains(in.c.Needs, NeedEvents)) {
			res.Status, res.Reason = Inconclusive, problem
			return res
		}
	}
	var missed []string
	for n := 1; ; n++ {
		a := attempt(parent, s, in, oracleProblems)
		for _, x := range a.exchanges {
			if n > 1 {
				x.Label = fmt.Sprintf("attempt %d: %s", n, x.Label)
			}
			res.Exchanges = append(res.Exchanges, x)
		}
		res.Downstream = append(res.Downstream, a.downstream...)
		res.Events = append(res.Events, a.events...)
		res.oracleAsked = res.oracleAsked || a.oracleAsked
		v := a.v
		if v.Status != Inconclusive || !v.Missed || n == attempts || parent.Err() != nil {
			res.Status, res.Expected, res.Observed, res.Reason = v.Status, v.Expected, v.Observed, v.Reason
			if len(missed) > 0 {
				res.Attempts = n
				res.Missed = missed
				if v.Missed && v.Status == Inconclusive {
					res.Reason = fmt.Sprintf("in each of %d attempts under fresh keys; the last: %s", n, v.Reason)
				} else if res.Observed != "" {
					res.Observed += fmt.Sprintf(" (attempt %d: the %d before it missed their timing)", n, n-1)
				}
			}
			return res
		}
		missed = append(missed, v.Reason)
		// A stall passes: give the machine a moment before the next try.
		if clock.Until(parent, time.Now().Add(time.Duration(n)*attemptPause)) != nil {
			res.Status, res.Reason = v.Status, v.Reason // the deferred check says interrupted
			return res
		}
	}
}

// attemptPause times the attempt number is the pause before the next
// attempt (0.5 s, then 1 s): a stall that missed an overlap may pass.
const attemptPause = 500 * time.Millisecond

// attempted is what one attempt of a case instance concluded and saw.
type attempted struct {
	v           Verdict
	exchanges   []wire.Exchange
	downstream  []string
	events      []string
	oracleAsked bool
}

// session is what every instance of one run shares.
type session struct {
	t       *apispec.Target
	p       *apispec.Profile
	carrier wire.Carrier
	timeout time.Duration
	ev      *evidence.Evidence
	double  *evidence.Downstream
	keys    *wire.Keys
	inproc  http.Handler
	proc    *managed.Process // the started target_cmd, nil when none was
	// eventProblems are the events check's findings per operation when
	// the events sit beside an oracle (calibrateOutbox).
	eventProblems map[string]string
	// severalEvents are the operations whose events check, the events
	// being the only oracle, found several events per execution: their
	// outbox cases judge that in spite of the oracle's problem.
	severalEvents map[string]bool
}

// env is an Env of s for op, bounded by ctx.
func (s *session) env(ctx context.Context, op *apispec.Operation) *Env {
	return &Env{Target: s.t, Profile: s.p, Op: op, carrier: s.carrier, timeout: s.timeout, double: s.double, inproc: s.inproc, proc: s.proc, oracle: newCounter(s.ev, s.t), events: s.ev.Events(), keys: s.keys, ctx: ctx}
}

// attempt runs in's case once, under fresh keys and its own budget.
func attempt(parent context.Context, s *session, in instance, oracleProblems map[string]string) (a attempted) {
	t, p := s.t, s.p
	ctx, cancel := context.WithTimeout(parent, caseBudget(t, p))
	defer cancel()
	e := s.env(ctx, in.op)
	e.Case, e.blind = in.c, oracleProblems
	defer func() {
		if r := recover(); r != nil {
			a.v = e.Inconclusive(fmt.Sprintf("idemcheck bug: case panicked: %v", r))
			a.exchanges = e.Exchanges()
		}
	}()
	v := e.provenVerdict(ctx, e.unseenVerdict(in.c.Run(ctx, e)))
	e.drain(ctx)
	if err := e.keyError(); err != nil {
		// A case that could not get its keys judged nothing about them.
		v = e.Inconclusive(err.Error())
	}
	return attempted{v: v, exchanges: e.Exchanges(), downstream: e.downstreamEvidence(), events: e.eventEvidence(), oracleAsked: e.oracle != nil && e.oracle.used.Load()}
}

// Counts tallies the results by status.
func (r *Report) Counts() map[Status]int {
	c := map[Status]int{}
	for _, res := range r.Results {
		c[res.Status]++
	}
	return c
}

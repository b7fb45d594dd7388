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

	"github.com/bmatcuk/doublestar/v4"
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

// Planned is one case instance a run would execute.
type Planned struct {
	Meta
	Operation string `json:"operation,omitempty"`
	// Supplied: the config supplies everything the case needs; Missing lists
	// what it lacks.
	Supplied bool   `json:"supplied"`
	Missing  []Need `json:"missing,omitempty"`
	// Skip, when set, is why a supplied instance will be skipped: the
	// profile or the declared TTL (Case.Skips). Runnable instances are
	// supplied and not skipped.
	Skip string `json:"skip,omitempty"`
	// NeedsTTL, when set, is the least declared TTL that would run an
	// instance skipped for a TTL too short (Case.MinTTL).
	NeedsTTL time.Duration `json:"needs_ttl,omitempty"`
	// OracleMode is how the instance counts executions: OraclePerKey,
	// OracleGlobalSerial, OracleIdentity or OracleNone.
	OracleMode string `json:"oracle_mode"`
}

// Oracle modes (Planned.OracleMode).
const (
	// OraclePerKey: the oracle counts executions per key.
	OraclePerKey = "per-key"
	// OracleGlobalSerial: a global counter, read around each key's
	// requests; the run is serial so nothing else moves it.
	OracleGlobalSerial = "global-serial"
	// OracleIdentity: no oracle; distinct created ids are a lower bound.
	OracleIdentity = "identity"
	// OracleNone: the case counts nothing, or nothing can count.
	OracleNone = "none"
)

// countsEffects reports whether c asks the oracle (Needs, or UsesOracle).
func countsEffects(c Case) bool {
	return c.UsesOracle || slices.Contains(c.Needs, NeedOracle) || slices.Contains(c.Needs, NeedEffects)
}

// oracleMode is how case c counts executions on op under t.
func oracleMode(t *Target, op *Operation, c Case) string {
	switch {
	case !countsEffects(c):
		return OracleNone
	case len(t.Oracles()) > 0 && t.GlobalOracle():
		return OracleGlobalSerial
	case len(t.Oracles()) > 0:
		return OraclePerKey
	case op != nil && op.IDPointer != "":
		return OracleIdentity
	}
	return OracleNone
}

// Name is the instance's unique name, as Result.Name.
func (p Planned) Name() string { return Result{Meta: p.Meta, Operation: p.Operation}.Name() }

// Runnable reports an instance the run will judge: supplied by the config
// and not skipped by the profile or the TTL.
func (p Planned) Runnable() bool { return p.Supplied && p.Skip == "" }

type instance struct {
	Planned
	c  Case
	op *Operation
}

// Plan lists the selected case instances in name order.
func Plan(t *Target, p *Profile, o RunOptions) ([]Planned, error) {
	if p == nil {
		p, _ = ProfileByName(DefaultProfile) // a preset: never an error
	}
	ins, err := plan(t, p, o)
	if err != nil {
		return nil, err
	}
	out := make([]Planned, len(ins))
	for i, in := range ins {
		out[i] = in.Planned
	}
	return out, nil
}

func plan(t *Target, p *Profile, o RunOptions) ([]instance, error) {
	runG, err := compileGlobs("run", o.Run)
	if err != nil {
		return nil, err
	}
	skipG, err := compileGlobs("skip", o.Skip)
	if err != nil {
		return nil, err
	}
	var out []instance
	for _, c := range Catalog() {
		ops := []*Operation{nil}
		if c.PerOperation {
			ops = ops[:0]
			for i := range t.Operations {
				ops = append(ops, &t.Operations[i])
			}
		}
		for _, op := range ops {
			in := instance{c: c, op: op, Planned: Planned{Meta: c.Meta}}
			if op != nil {
				in.Operation = op.Name
			} else if len(t.Operations) > 0 {
				in.op = &t.Operations[0] // the subject of a run-wide case
			}
			subject := in.op
			name := in.Name()
			if (len(runG) > 0 && !matchAny(runG, name, c.ID)) || matchAny(skipG, name, c.ID) {
				continue
			}
			for _, n := range c.Needs {
				if !suppliesFor(t, subject, n) {
					in.Missing = append(in.Missing, n)
				}
			}
			in.Supplied = len(in.Missing) == 0
			if in.Supplied && c.Skips != nil {
				in.Skip = c.Skips(t, p, subject)
			}
			if in.Supplied && in.Skip == "" && c.MinTTL != nil && t.TTL > 0 {
				if need, why := c.MinTTL(t, p, subject); t.TTL < need {
					need = (need + 99*time.Millisecond).Truncate(100 * time.Millisecond) // up: the skip names a TTL that runs the case
					in.Skip = fmt.Sprintf("declared ttl %s is too short for this case: needs ttl ≥ %s (%s)", t.TTL, need, why)
					in.NeedsTTL = need
				}
			}
			in.OracleMode = oracleMode(t, subject, c)
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// compileGlobs checks globs in doublestar's syntax (the one of .gitignore
// and editors): '*' and '?' stay within a segment, a '**' segment crosses
// segments, [...] is a character class, {a,b} alternatives.
func compileGlobs(flag string, globs []string) ([]string, error) {
	for _, g := range globs {
		if g == "" {
			return nil, fmt.Errorf("--%s: empty pattern", flag)
		}
		if !doublestar.ValidatePattern(g) {
			return nil, fmt.Errorf("--%s %q: %v", flag, g, doublestar.ErrBadPattern)
		}
	}
	return globs, nil
}

func matchAny(globs []string, names ...string) bool {
	for _, g := range globs {
		for _, n := range names {
			// The pattern was validated by compileGlobs.
			if ok, _ := doublestar.Match(g, n); ok {
				return true
			}
		}
	}
	return false
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
func Run(ctx context.Context, t *Target, p *Profile, o RunOptions) (*Report, error) {
	if p == nil {
		p, _ = ProfileByName(DefaultProfile) // a preset: never an error
	}
	ins, err := plan(t, p, o)
	if err != nil {
		return nil, err
	}
	known, err := compileGlobs("known-failing", o.KnownFailing)
	if err != nil {
		return nil, err
	}
	if t.Downstream != nil && t.downstream == nil {
		dt, d, err := StartDownstream(ctx, t)
		if err != nil {
			return nil, err
		}
		defer closeDouble(d)
		t = dt
	}
	if t.Command != "" && t.managed == nil {
		mt, m, err := startManaged(ctx, t)
		if err != nil {
			return nil, err
		}
		defer m.Stop()
		t = mt
	}
	client := t.Client(t.Timeout + p.MaxBlock)
	defer client.CloseIdleConnections() // no keep-alive goroutines outlive the run
	if err := Preflight(ctx, t, client); err != nil {
		return nil, err
	}
	ev, err := OpenEvidence(t, client)
	if err != nil {
		return nil, err
	}
	defer ev.Close()
	// The profile's key_format generator is the client-generated default;
	// --hash-keys and key_source override it.
	keys := t.Keys(client, func(uint64) string { return p.NewKey() })
	if o.Seed != 0 {
		r := rand.New(rand.NewPCG(o.Seed, 0x1dc))
		r.Shuffle(len(ins), func(i, j int) { ins[i], ins[j] = ins[j], ins[i] })
	}
	rep := &Report{Target: t.Redact(t.BaseURL), Profile: p.Name, Strict: o.Strict, Seed: o.Seed, Started: time.Now()}
	// No verdict is drawn on a target whose normal request fails.
	if err := checkNormal(ctx, t, client, keys, sentOps(t, ins)); err != nil {
		return nil, err
	}
	if err := checkIDPointers(ctx, t, p, client, ev, keys, ins); err != nil {
		return nil, err
	}
	problems, notes := calibrate(ctx, t, p, client, ev, keys, ins)
	parallel := o.Parallel
	if parallel <= 0 || parallel > len(ins) {
		parallel = len(ins)
	}
	if t.GlobalOracle() { // known once calibrated: a downstream double may have turned global
		parallel = 1
	}
	if names, need := ttlSkips(ins); len(names) > 0 {
		rep.TTLSkipped, rep.NeedsTTL = len(names), need
		notes = append(notes, fmt.Sprintf("declared ttl %s is too short for %d case instances, skipped (%s): a ttl ≥ %s runs them all (--ttl, and the same TTL in the deployment)",
			t.TTL, len(names), strings.Join(names, ", "), need))
	}
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
	results := make([]Result, len(ins))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	var cbMu sync.Mutex
	runOne := func(i int) {
		res := runInstance(ctx, t, p, client, ev, keys, ins[i], problems, o.attempts())
		res.KnownFailing = matchAny(known, res.Name(), res.ID)
		results[i] = res
		if o.OnResult != nil {
			cbMu.Lock()
			o.OnResult(res)
			cbMu.Unlock()
		}
	}
	for i := range ins {
		if killsTarget(ins[i]) || runsAlone(t, ins[i]) {
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
		if killsTarget(ins[i]) || runsAlone(t, ins[i]) {
			runOne(i)
		}
	}
	sort.Slice(results, func(i, j int) bool { return results[i].Name() < results[j].Name() })
	rep.Results = results
	rep.Duration = time.Since(rep.Started)
	rep.LeftOut = leftOutMust(t, p, o, ins)
	// Interrupted only when an instance was cut short or never ran: a
	// context ended after the last verdict (a test's, say) took nothing.
	rep.Interrupted = slices.ContainsFunc(results, func(r Result) bool { return r.Status == Interrupted })
	return rep, nil
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
// the run's --run/--skip globs left out of ins.
func leftOutMust(t *Target, p *Profile, o RunOptions, ins []instance) []string {
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
		if in.Level == Must && !selected[in.Name()] {
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
func caseBudget(t *Target, p *Profile) time.Duration {
	return 3*t.Timeout + t.TTL + t.Lease + p.MaxBlock + p.Grace + 10*time.Second
}

// calibrate checks the oracle once per operation that a selected,
// supplied instance counts effects on: a normal request under a fresh key
// must raise the count by exactly 1. It returns the problem found per
// operation name and the notes for the report: one line per problem.
func calibrate(ctx context.Context, t *Target, p *Profile, client *http.Client, ev *Evidence, keys *Keys, ins []instance) (problems map[string]string, notes []string) {
	problems = map[string]string{}
	if ev == nil {
		return problems, nil
	}
	used := map[string]bool{}
	for _, in := range ins {
		if in.Runnable() && in.op != nil && countsEffects(in.c) {
			for _, op := range touched(t, in) {
				used[op.Name] = true
			}
		}
	}
	for i := range t.Operations {
		op := &t.Operations[i]
		if !used[op.Name] {
			continue
		}
		problem, note := calibrateOp(ctx, t, p, client, ev, keys, op)
		if problem != "" {
			problems[op.Name] = problem
			note = problem
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	if n := sharedCounterNote(t, used, problems); n != "" {
		notes = append(notes, n)
	}
	return problems, notes
}

// touched lists the operations in sends requests to: its own and its
// case's Peer (whether or not --run/--skip selected the peer's own
// instances).
func touched(t *Target, in instance) []*Operation {
	ops := []*Operation{in.op}
	if in.c.Peer != nil {
		if o := in.c.Peer(t, in.op); o != nil {
			ops = append(ops, o)
		}
	}
	return ops
}

// sharedCounterNote is the start-up note on one global counter (no
// "{key}") that counts several operations, when the calibration found it
// counting some of them but not others: a counter pointer often counts
// one operation's executions only (pointer /charges). Requests to the
// others are judged by their ids (Env.oracleSees); their own instances
// are inconclusive until they get an oracle.
func sharedCounterNote(t *Target, checked map[string]bool, problems map[string]string) string {
	o := t.Oracle
	if o == nil || o.PerKey() {
		return ""
	}
	var seen, unseen []string
	for i := range t.Operations {
		switch op := &t.Operations[i]; {
		case op.Oracle != nil || !checked[op.Name]:
		case problems[op.Name] != "":
			unseen = append(unseen, op.Name)
		default:
			seen = append(seen, op.Name)
		}
	}
	if len(seen) == 0 || len(unseen) == 0 {
		return ""
	}
	return fmt.Sprintf("one counter (GET %s, pointer %s) serves every operation: it counts %s, it does not count %s; give each operation its own oracle (operations[].oracle)",
		o.URL, o.Pointer, strings.Join(seen, ", "), strings.Join(unseen, ", "))
}

// checkIDPointers checks each id_pointer a selected, supplied instance
// relies on before any verdict rests on it: two normal requests under two
// fresh keys must answer ids at the pointer, and two different ones for a
// POST (a PUT or PATCH of one resource names the same one). A typo
// (/id for /order_id) would otherwise read as "0 executions" and fail a
// correct server. The error is one line naming the pointer and the body's
// members. An operation whose normal call does not succeed is left to the
// cases (and to the oracle check) to report.
func checkIDPointers(ctx context.Context, t *Target, p *Profile, client *http.Client, ev *Evidence, keys *Keys, ins []instance) error {
	checked := map[string]bool{}
	for _, in := range ins {
		op := in.op
		if !in.Supplied || op == nil || op.IDPointer == "" || checked[op.Name] ||
			!(countsEffects(in.c) || slices.Contains(in.c.Needs, NeedIDPointer)) {
			continue
		}
		checked[op.Name] = true
		if err := checkIDPointer(ctx, t, p, client, ev, keys, op); err != nil {
			return err
		}
	}
	return nil
}

func checkIDPointer(ctx context.Context, t *Target, p *Profile, client *http.Client, ev *Evidence, keys *Keys, op *Operation) error {
	ctx, cancel := context.WithTimeout(ctx, 2*t.Timeout)
	defer cancel()
	e := &Env{Target: t, Profile: p, Op: op, client: client, oracle: newCounter(ev), keys: keys, ctx: ctx}
	defer e.drain(ctx)
	at := fmt.Sprintf("operations[%d].id_pointer %s", slices.IndexFunc(t.Operations, func(o Operation) bool { return o.Name == op.Name }), op.IDPointer)
	var ids []string
	for range 2 {
		k := e.NewKey()
		if e.keyError() != nil {
			return nil // the cases report it
		}
		r := e.Send(ctx, Req{Label: "id_pointer check", Key: k})
		if !r.OK() {
			return nil
		}
		id := e.CreatedID(r)
		doc, _ := decodeJSON(r.Body)
		switch {
		case id == "":
			return fmt.Errorf("%s: nothing there in the %d body%s", at, r.Status, bodyMembers(doc))
		case len(ids) == 1 && ids[0] == id && op.Method == http.MethodPost:
			// A PUT or PATCH of one resource legally names it in every
			// answer; a POST that creates one must not.
			return fmt.Errorf("%s: the same value %q for two keys: not the created resource's id%s", at, id, bodyMembers(doc))
		}
		ids = append(ids, id)
	}
	return nil
}

// bodyMembers lists a JSON body's top-level members for an error.
func bodyMembers(doc any) string {
	if m, ok := doc.(map[string]any); !ok || len(m) == 0 {
		return " (not a JSON object with members)"
	}
	return members(doc)
}

// calibrationWait bounds how long a count may lag behind its response:
// as long as a case's count is re-read (lagSettle).
const calibrationWait = lagSettle

// calibrateOp sends op's normal request under a fresh key and returns a
// one-line problem when the oracle did not count exactly one execution,
// or a note when the count changed kind (a downstream double whose calls
// hold no token counts globally: downstreamUntokened).
func calibrateOp(ctx context.Context, t *Target, p *Profile, client *http.Client, ev *Evidence, keys *Keys, op *Operation) (problem, note string) {
	ctx, cancel := context.WithTimeout(ctx, 2*t.Timeout+calibrationWait)
	defer cancel()
	e := &Env{Target: t, Profile: p, Op: op, client: client, oracle: newCounter(ev), keys: keys, ctx: ctx}
	defer e.drain(ctx)
	k := e.NewKey()
	if err := e.keyError(); err != nil {
		return fmt.Sprintf("oracle check on %s: %v; effect-counting cases are inconclusive", op.Name, err), ""
	}
	before, err := e.Executions(ctx, k)
	if err != nil {
		return fmt.Sprintf("oracle check on %s: %v; effect-counting cases are inconclusive", op.Name, err), ""
	}
	untokened := t.downstreamUntokened(op)
	r := e.Send(ctx, Req{Label: "oracle check", Key: k})
	if !r.OK() {
		return fmt.Sprintf("oracle check on %s: the normal call answered %s, so the oracle could not be checked; effect-counting cases are inconclusive", op.Name, r.String()), ""
	}
	deadline := time.Now().Add(calibrationWait)
	for {
		n, err := e.count(ctx, k, false) // polled here: not settled in count
		if err != nil {
			return fmt.Sprintf("oracle check on %s: %v; effect-counting cases are inconclusive", op.Name, err), ""
		}
		switch rise := n - before; {
		case rise == 1:
			t.witness(op, k)
			return "", ""
		case rise == 0 && t.downstreamUntokened(op) > untokened:
			return t.downstreamGlobal(op, t.downstreamUntokened(op)-untokened)
		case rise > 1:
			return fmt.Sprintf("oracle check on %s: one request under a fresh key counted %d executions: the configured oracles overlap (two count the same execution), something else moves the counter, or one request executes %d times; effect-counting cases are inconclusive", op.Name, rise, rise), ""
		case time.Now().After(deadline) || ctx.Err() != nil:
			if o := t.OracleOf(op); o != nil && o.Downstream != "" {
				return fmt.Sprintf("downstream %s: a %d answer to %s %s under a fresh key made no call to the double at %s within %s: point the API's provider URL at it; effect-counting cases are inconclusive", o.Downstream, r.Status, op.Method, op.Path, t.Double().URL(), calibrationWait), ""
			}
			return fmt.Sprintf("oracle misconfigured: a %d answer to %s %s under a fresh key left the count unchanged within %s (check the oracle's url, pointer and principal); effect-counting cases are inconclusive", r.Status, op.Method, op.Path, calibrationWait), ""
		}
		if waitUntil(ctx, time.Now().Add(50*time.Millisecond)) != nil {
			continue // the deadline case above reports it
		}
	}
}

func runInstance(ctx context.Context, t *Target, p *Profile, client *http.Client, ev *Evidence, keys *Keys, in instance, oracleProblems map[string]string, attempts int) (res Result) {
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
	if countsEffects(in.c) && in.op != nil {
		// A problem on another operation the case touches is not the
		// case's: it judges those requests by their own evidence (ids)
		// where the oracle does not see them (Env.oracleSees).
		if problem := oracleProblems[in.op.Name]; problem != "" {
			res.Status, res.Reason = Inconclusive, problem
			return res
		}
	}
	var missed []string
	for n := 1; ; n++ {
		a := attempt(parent, t, p, client, ev, keys, in, oracleProblems)
		for _, x := range a.exchanges {
			if n > 1 {
				x.Label = fmt.Sprintf("attempt %d: %s", n, x.Label)
			}
			res.Exchanges = append(res.Exchanges, x)
		}
		res.Downstream = append(res.Downstream, a.downstream...)
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
		if waitUntil(parent, time.Now().Add(time.Duration(n)*attemptPause)) != nil {
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
	exchanges   []Exchange
	downstream  []string
	oracleAsked bool
}

// attempt runs in's case once, under fresh keys and its own budget.
func attempt(parent context.Context, t *Target, p *Profile, client *http.Client, ev *Evidence, keys *Keys, in instance, oracleProblems map[string]string) (a attempted) {
	ctx, cancel := context.WithTimeout(parent, caseBudget(t, p))
	defer cancel()
	e := &Env{Target: t, Profile: p, Op: in.op, Case: in.c, client: client, oracle: newCounter(ev), blind: oracleProblems, keys: keys, ctx: ctx}
	defer func() {
		if r := recover(); r != nil {
			a.v = e.Inconclusive(fmt.Sprintf("idemcheck bug: case panicked: %v", r))
			a.exchanges = e.Exchanges()
		}
	}()
	v := e.unseenVerdict(in.c.Run(ctx, e))
	e.drain(ctx)
	if err := e.keyError(); err != nil {
		// A case that could not get its keys judged nothing about them.
		v = e.Inconclusive(err.Error())
	}
	return attempted{v: v, exchanges: e.Exchanges(), downstream: e.downstreamEvidence(), oracleAsked: e.oracle != nil && e.oracle.used.Load()}
}

// Counts tallies the results by status.
func (r *Report) Counts() map[Status]int {
	c := map[Status]int{}
	for _, res := range r.Results {
		c[res.Status]++
	}
	return c
}

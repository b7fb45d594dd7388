package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/internal/managed"
	"github.com/idemcheck/idemcheck/wire"
)

// ErrUnreachable wraps a failed preflight (wire.Preflight, shared
// by every face): nothing answered at the target.
var ErrUnreachable = apispec.ErrUnreachable

// ErrConfig wraps an invalid option or an operation/variant the target
// does not declare.
var ErrConfig = errors.New("load configuration")

type config struct {
	mode      Mode
	plan      Plan
	hitRatio  float64
	pool      int
	hot       int
	keys      KeyGen
	keySeed   string
	workers   uint64
	maxWork   uint64
	timeout   time.Duration
	operation string
	variant   string
	patch     json.RawMessage
	verySlow  time.Duration
	ttl       time.Duration
	// margin is the profile's margin before the TTL, compare its
	// replay_compare; idPointer is the operation's id_pointer.
	margin    time.Duration
	compare   string
	idPointer string
	// expectStatus is the declared status of the variant sent (0: none).
	expectStatus int
	// injected is what buildRequest merged into the body (Summary.Injected).
	injected *Injected
	results  io.Writer
	timePlot bool
	progress func(Progress)
	shard    Shard
	// paced, when set, is the carrier the run's attacks send through on
	// the paced client (one that is not wire.Verbatim: gRPC, GraphQL,
	// JSON-RPC, MCP); else direct sends the requests as built;
	// protocol is what the target answered in (Summary.Protocol).
	paced    wire.Carrier
	direct   *directHTTP
	protocol string
	// sums is what the replay check reads of each answer (nil in nokey),
	// one per run: its cache serves the warm-up and every phase.
	sums *replaySums
}

// Option configures Run.
type Option func(*config)

// WithMode picks the key strategy (default miss).
func WithMode(m Mode) Option { return func(c *config) { c.mode = m } }

// WithPlan sets the rate plan (default 100@5s).
func WithPlan(p Plan) Option { return func(c *config) { c.plan = p } }

// WithHitRatio is the share of hits in mix mode (default 0.9).
func WithHitRatio(r float64) Option { return func(c *config) { c.hitRatio = r } }

// WithPool sets how many keys are completed during warm-up and replayed
// as hits (default 100).
func WithPool(n int) Option { return func(c *config) { c.pool = n } }

// WithHotKeys sets how many keys contention mode hammers (default 4).
func WithHotKeys(n int) Option { return func(c *config) { c.hot = n } }

// WithHashKeys derives keys from a business id sequence (SHA-256 of
// "seed:n") instead of random run-unique keys.
func WithHashKeys(seed string) Option {
	return func(c *config) { c.keys, c.keySeed = HashKeys(seed), seed }
}

// WithKeyGen makes the client-generated keys with gen (default: the
// target's KeyGen, else RandomKeys). A profile's key_format plugs in here:
// pass a generator whose keys obey it (Profile.NewKey). A target with a
// key_source gets server-issued keys whatever this says.
func WithKeyGen(gen KeyGen) Option { return func(c *config) { c.keys = gen } }

// WithWorkers bounds the attack's workers: initial (over HTTP also the
// number of connections opened before the measured window; one HTTP/2
// connection carries a gRPC target's calls) and maximum.
func WithWorkers(initial, max uint64) Option {
	return func(c *config) { c.workers, c.maxWork = initial, max }
}

// WithTimeout bounds each request (default 10s).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithOperation picks the target operation by name (default the first).
func WithOperation(name string) Option { return func(c *config) { c.operation = name } }

// WithVariant applies a declared variant's patch (e.g. "slow") to every
// request. Contention mode uses "slow" when the target declares it and no
// variant or patch was chosen, so same-key requests overlap.
func WithVariant(name string) Option { return func(c *config) { c.variant = name } }

// WithBodyPatch applies a JSON merge patch to the request body (after the
// variant), e.g. {"delay_ms":50} for a slow miss path on the reference.
func WithBodyPatch(p json.RawMessage) Option { return func(c *config) { c.patch = p } }

// WithTTL sets the target's key lifetime for the replay check: a replay
// that may have come after its key expired is a legal fresh execution
// (default: the target's declared TTL; 0 means keys never expire).
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithProfile judges replays and executions as `run` does under p: its
// replay_compare decides what a replay must repeat (apispec.ReplayForm:
// bytes, the JSON document, or the status alone) and its margin which
// answers count as inside a key's TTL (sent within TTL − margin of the
// key's first request). Without it replays are compared as bytes and the
// margin is 0.
func WithProfile(p *apispec.Profile) Option {
	return func(c *config) { c.compare, c.margin = p.ReplayCompare, p.Margin }
}

// WithVerySlow sets the latency counted as very slow (default 1s).
func WithVerySlow(d time.Duration) Option { return func(c *config) { c.verySlow = d } }

// WithResults streams every result (warm-up included, so replays can be
// re-checked offline) to w as vegeta gob, mergeable by ReadResults.
func WithResults(w io.Writer) Option { return func(c *config) { c.results = w } }

// WithTimePlot collects the latency-over-time plot of the HTML report
// (Summary.TimePlot).
func WithTimePlot() Option { return func(c *config) { c.timePlot = true } }

// WithProgress is called about once a second during each phase.
func WithProgress(f func(Progress)) Option { return func(c *config) { c.progress = f } }

// Progress is a live snapshot of the running phase.
type Progress struct {
	Phase    string
	Index    int // 1-based
	Phases   int
	Sent     uint64
	Planned  uint64 // 0 for max phases
	Errors   uint64
	Elapsed  time.Duration
	Duration time.Duration
	P99      time.Duration // over the measured paths so far
}

// Limits keep every loop and buffer bounded.
const (
	maxPool    = 100_000
	maxHot     = 10_000
	maxWorkers = 10_000
)

func defaults() config {
	plan, _ := ParsePlan("100@5s")
	return config{mode: ModeMiss, plan: plan, hitRatio: 0.9, pool: 100, hot: 4,
		workers: 32, maxWork: 512, timeout: 10 * time.Second, verySlow: time.Second}
}

func (c *config) validate() error {
	switch {
	case c.hitRatio < 0 || c.hitRatio > 1:
		return fmt.Errorf("hit ratio %v: want 0..1", c.hitRatio)
	case c.pool < 1 || c.pool > maxPool:
		return fmt.Errorf("pool %d: want 1..%d", c.pool, maxPool)
	case c.hot < 1 || c.hot > maxHot:
		return fmt.Errorf("hot keys %d: want 1..%d", c.hot, maxHot)
	case c.workers < 1 || c.maxWork < c.workers || c.maxWork > maxWorkers:
		return fmt.Errorf("workers %d/max %d: want 1 <= workers <= max-workers <= %d", c.workers, c.maxWork, maxWorkers)
	case c.timeout <= 0:
		return fmt.Errorf("timeout %s: want > 0", c.timeout)
	case len(c.plan) == 0:
		return fmt.Errorf("empty plan")
	}
	return nil
}

// buildRequest resolves the operation, principal and body of the run.
func buildRequest(t *apispec.Target, d *evidence.Downstream, c *config) (*request, error) {
	if len(t.Operations) == 0 {
		return nil, fmt.Errorf("target declares no operations")
	}
	op := t.Operations[0]
	if c.operation != "" {
		found := false
		for _, o := range t.Operations {
			if o.Name == c.operation {
				op, found = o, true
			}
		}
		if !found {
			return nil, fmt.Errorf("operation %q: not declared by the target", c.operation)
		}
	}
	variant := c.variant
	if variant == "" && c.patch == nil && c.mode == ModeContention {
		if _, ok := op.Variants[apispec.VariantSlow]; ok {
			variant = apispec.VariantSlow
		}
	}
	body := []byte(op.Body)
	var err error
	var declared apispec.Variant
	if variant != "" {
		b, v, ok := t.Variant(&op, variant)
		if !ok {
			return nil, fmt.Errorf("variant %q: not declared by operation %q", variant, op.Name)
		}
		body, c.expectStatus, declared = b, v.Status, v
	}
	c.injected = injected(&op, variant, declared, c.patch)
	if c.patch != nil {
		if body, err = jsonx.MergePatch(body, c.patch); err != nil {
			return nil, fmt.Errorf("body patch: %w", err)
		}
	}
	c.idPointer = op.IDPointer
	if op.Updates() {
		// Every answer of an update names one resource: its id is no
		// sign of a new execution; its version is (within one key).
		c.idPointer = op.VersionPointer
	}
	rq := &request{t: t, op: &op, bases: t.Bases(), body: body}
	if d != nil {
		// The downstream double: each key's token in its requests, and
		// the variant's behaviour for the key's calls.
		rq.mark = func(key, u string, h http.Header, body []byte) (string, []byte) {
			if variant != "" {
				_ = d.BehaveVariant(&op, key, variant) // routes are validated
			}
			return d.Mark(&op, key, u, h, body)
		}
	}
	return rq, nil
}

// Run warms up (connections, then the hit pool), runs every phase of the
// plan on a fresh paced client (paced.go), then asks the oracle.
// Cancelling ctx stops the running phase; the partial report is still
// returned.
func Run(ctx context.Context, t *apispec.Target, opts ...Option) (*Summary, error) {
	t = t.WithDefaults()
	c, err := newConfig(t, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	// The config's downstream double: the API's provider, the oracle and
	// what makes the contention mode's slow variant slow.
	d, err := evidence.StartDownstream(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	defer d.Close()
	// A managed target (target_cmd) is started here, as run and chaos
	// start it: its base_url is a template ({port}) until then.
	if t.Command != "" {
		mt, m, err := managed.Start(ctx, t, d.URL())
		if errors.Is(err, apispec.ErrUnreachable) {
			return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		defer m.Stop()
		t = mt
		d.Started(t)
	}
	rq, err := buildRequest(t, d, &c)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if c.ttl == 0 {
		c.ttl = t.TTL
	}
	c.sums = c.replaySums()
	// client carries the preflight, the warm connections and an HTTP
	// carrier's calls; the measured requests of a wire.Verbatim carrier
	// go straight to its transport (directHTTP).
	transport := wire.Transport(t, int(c.maxWork))
	client := &http.Client{
		Transport:     transport,
		Timeout:       c.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	defer client.CloseIdleConnections()
	carrier := wire.NewCarrier(t, client)
	// load times every request from its intended send, never from its
	// write: a carrier that can leave the send untimed does (gRPC: no
	// stats handler per call).
	if u, ok := carrier.(wire.Untimed); ok {
		timed := carrier
		carrier = u.Untimed()
		timed.Close() // it never dialled
	}
	defer carrier.Close()
	if c.protocol, err = wire.Preflight(ctx, t, carrier, client); err != nil {
		return nil, err
	}
	// HTTP requests are sent as built: any other carrier (gRPC's
	// messages, an answering carrier's sessions and documents) is called
	// through its Do, its protocol the carrier's (Reach).
	if _, ok := carrier.(wire.Verbatim); ok {
		c.direct = &directHTTP{rt: transport, timeout: c.timeout}
	} else {
		c.paced = carrier
	}
	// No number is drawn on an operation whose normal request fails. A
	// client of its own: the probe is no measured request. Over gRPC the
	// run's own carrier probes: the call resolves the method (server
	// reflection) on the connection the window uses, before it starts.
	op := &t.Operations[0]
	if i := slices.IndexFunc(t.Operations, func(o apispec.Operation) bool { return o.Name == c.operation }); i >= 0 {
		op = &t.Operations[i]
	}
	probe, pc := client, carrier
	if c.paced == nil {
		probe = wire.Client(t, c.timeout)
		defer probe.CloseIdleConnections()
		pc = wire.NewCarrier(t, probe)
	}
	if err := evidence.CheckNormal(ctx, t, pc, d, evidence.NormalKeys(t, probe), []*apispec.Operation{op}); err != nil {
		return nil, err
	}
	setupClient := wire.Client(t, c.timeout)
	defer setupClient.CloseIdleConnections()
	setupCarrier := wire.NewCarrier(t, setupClient)
	defer setupCarrier.Close()
	rq.setups = newSetups(ctx, t, op, setupCarrier)
	// next numbers client-generated keys across phases so none repeats.
	var next atomic.Uint64
	// c.keys already is Target.KeyGen (--hash-keys) when set, split into
	// this run's shard.
	keys := &keySource{keys: wire.KeysFrom(t, client, c.keys), ctx: ctx, next: &next}

	col := newCollector(c.verySlow, c.ttl, c.margin)
	s := &sink{col: col}
	if c.sums != nil && c.paced == nil {
		// vegeta's results only: nothing holds their header past the sink.
		s.recycle = c.sums.recycle
	}
	if c.results != nil {
		s.enc = vegeta.NewEncoder(c.results)
	}
	if c.timePlot {
		s.plot = NewTimePlot()
	}

	pool, hot, err := warmUp(ctx, &c, t, rq, client, keys, s)
	if err != nil {
		return nil, err
	}
	oclient := wire.Client(t, 5*time.Second)
	defer oclient.CloseIdleConnections()
	orc, err := newOracle(ctx, t, oclient, d)
	if err != nil {
		return nil, err
	}
	defer orc.close()
	orep := &OracleReport{}
	orc = c.oracleBefore(ctx, t, orc, oclient, d, orep)

	tr := rq.targeter(c.mode, c.hitRatio, pool, hot, keys)
	interrupted := runPlan(ctx, &c, tr, s)
	rep := c.report(t, col, s, interrupted)
	if orc != nil {
		// The run's ctx may be cancelled (Ctrl-C): the oracle still gets
		// a short, bounded look so the partial report is checked too.
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		orc.verify(octx, orep, col.check, pool)
		cancel()
		col.refreshViolations(rep)
	}
	rep.Oracle = orep
	if err := keys.failed(); err != nil {
		return rep, err
	}
	if err := rq.setups.failed(); err != nil {
		return rep, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return rep, s.err
}

// newConfig applies opts over the defaults, validates them and picks the
// key generator: the option's, else the target's, else random keys, split
// into this run's shard.
func newConfig(t *apispec.Target, opts []Option) (config, error) {
	c := defaults()
	for _, o := range opts {
		o(&c)
	}
	if err := c.validate(); err != nil {
		return c, err
	}
	if c.keys == nil && t.KeyGen != nil {
		c.keys, c.keySeed = t.KeyGen, t.KeySeed
	}
	if c.keys == nil {
		c.keys = RandomKeys()
	}
	c.keys = c.shard.keys(c.keys)
	return c, nil
}

// oracleBefore calibrates the oracle and reads the totals before the
// window into orep; it returns the oracle to ask after the run, nil when
// there is none or its calibration failed (the caller closes orc).
func (c *config) oracleBefore(ctx context.Context, t *apispec.Target, orc *oracle, oclient *http.Client, d *evidence.Downstream, orep *OracleReport) *oracle {
	var err error
	if orc != nil {
		// A downstream double counts only once one request is seen to
		// call it with its key's token (calibration, as run does).
		oc := wire.NewCarrier(t, oclient)
		defer oc.Close()
		note, ok := d.Check(ctx, oc)
		if !ok {
			orc = nil
		}
		orep.Note = note
	}
	if orc != nil && orc.ev.EventsOnly() {
		// Each events count waits out events.settle: probing a sample of
		// keys would add minutes to a load run. run and chaos read them.
		orc = nil // closed by the deferred close above
		orep.Note = "events: is not read by load (each count waits out events.settle); run's outbox/ cases and chaos read it (docs/events.md)"
	}
	if orc != nil {
		orep.Available = true
		// Concurrent shards move the totals of one another: only the
		// per-key probes (disjoint keys) are theirs to check.
		if c.shard.N <= 1 {
			orep.Before, orep.Totals, err = orc.totals(ctx)
			if err != nil {
				orep.Error, orep.Totals = err.Error(), false
			}
			if o := t.Oracle; orep.Totals && o != nil && o.URL != "" && o.Count == nil {
				orep.TotalsURL = o.TotalsURL(t)
				if !o.PerKey() { // the URL counts every key itself
					orep.TotalsURL = o.KeyURL(t, "")
				}
				orep.TotalsURL = t.Redact(orep.TotalsURL)
			}
		}
	}
	return orc
}

// runPlan runs the plan's phases in order; it reports whether ctx
// stopped the run.
func runPlan(ctx context.Context, c *config, tr vegeta.Targeter, s *sink) bool {
	for i, ph := range c.plan {
		if ctx.Err() != nil {
			return true
		}
		if runPhase(ctx, c, tr, ph, i, s) {
			return true
		}
	}
	return false
}

// report is the collector's report with what the run was: target, mode,
// plan, shard and what was sent.
func (c *config) report(t *apispec.Target, col *collector, s *sink, interrupted bool) *Summary {
	rep := col.report()
	rep.Target, rep.Mode, rep.Plan, rep.KeySeed = t.Redact(t.BaseURL), c.mode, c.plan.String(), c.keySeed
	// Over HTTP too: runPhase retimes vegeta's results (schedule).
	rep.Protocol, rep.LatencyFrom = c.protocol, LatencyFromIntended
	for _, r := range t.Replicas {
		rep.Replicas = append(rep.Replicas, t.Redact(r))
	}
	if c.shard.N > 1 {
		rep.Shard = c.shard.String()
	}
	if c.mode == ModeMix {
		rep.HitRatio = c.hitRatio
	}
	rep.Interrupted = interrupted
	rep.ExpectedStatus = c.expectStatus
	rep.Injected = c.injected
	rep.Delayed = s.delayed
	rep.plot = s.plot
	return rep
}

// sink fans each result out to the collector, the results file and the plot.
type sink struct {
	col  *collector
	enc  vegeta.Encoder
	plot *TimePlot
	err  error // first results-file error
	// delayed counts sends the worker cap held back (capPacer).
	delayed uint64
	// recycle, when set, takes back each result's header map once added.
	recycle func(http.Header)
}

func (s *sink) add(r *vegeta.Result) {
	s.col.add(r)
	if s.enc != nil && s.err == nil {
		if err := s.enc.Encode(r); err != nil {
			s.err = fmt.Errorf("results file: %w", err)
		}
	}
	if s.plot != nil {
		s.plot.Add(r)
	}
	if s.recycle != nil {
		s.recycle(r.Headers)
		r.Headers = nil
	}
}

// replaySums is what the replay check reads of each answer: every mode
// but nokey (nil) compares bodies, by their sums under the profile's
// replay_compare, and executions by created ids.
func (c *config) replaySums() *replaySums {
	if c.mode == ModeNoKey {
		return nil
	}
	return &replaySums{compare: c.compare, idPointer: c.idPointer, facts: &bodyFacts{}}
}

// phaseMaxBody is how much of each measured body a result keeps: a results
// file keeps whole bodies; otherwise the check needs only the sums and a
// quotable prefix, and nokey nothing at all (a cheap baseline).
func (c *config) phaseMaxBody() int64 {
	switch {
	case c.results != nil:
		return -1
	case c.mode == ModeNoKey:
		return 0
	}
	return evidenceBytes
}

// attacker is a new paced client (each is single-use): over the run's
// carrier, or sending a wire.Verbatim carrier's requests as built.
func (c *config) attacker(workers, maxWork uint64, maxBody int64) *pacedAttacker {
	a := newPaced(c.paced, c.sums, c.timeout, workers, maxWork, maxBody)
	a.direct = c.direct // nil unless the carrier is wire.Verbatim
	return a
}

// runPhase runs one phase on a new attacker; it reports whether ctx
// stopped it.
func runPhase(ctx context.Context, c *config, tr vegeta.Targeter, ph Phase, i int, s *sink) bool {
	atk := c.attacker(c.workers, c.maxWork, c.phaseMaxBody())
	defer func() { s.delayed += atk.delayed.Load() }()
	results := atk.Attack(tr, ph.Pacer, ph.Duration, ph.Spec)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	began := time.Now()
	pr := Progress{Phase: ph.Spec, Index: i + 1, Phases: len(c.plan), Planned: ph.expectedHits(), Duration: ph.Duration}
	stopped := false
	done := ctx.Done()
	report := func() {
		if c.progress != nil {
			pr.Elapsed = time.Since(began)
			pr.P99 = s.col.p99()
			c.progress(pr)
		}
	}
	for {
		select {
		case r, ok := <-results:
			if !ok {
				report() // the phase's final figures
				return stopped
			}
			s.add(r)
			pr.Sent++
			if r.Error != "" {
				pr.Errors++
			}
		case <-done:
			atk.Stop()
			stopped, done = true, nil
		case <-tick.C:
			report()
		}
	}
}

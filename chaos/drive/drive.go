package drive

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/chaos/front"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/internal/managed"
	"github.com/idemcheck/idemcheck/wire"
)

// config is one chaos run, as the options set it.
type config struct {
	target      *apispec.Target
	ops         int          // logical operations, each a fresh key
	concurrency int          // operations in flight at once
	faults      []chaos.Rule // parsed once (front.Rules)
	seed        uint64
	history     string // "": a temporary file
	maxAttempts int
	deadline    time.Duration
	keyGen      apispec.KeyGen
	onProgress  func(Progress)
	replicas    int
	killEvery   time.Duration
	margin      time.Duration
	// inFlight: the profile's in-flight answers as HTTP statuses, which
	// the client waits out and retries (nil: 409, the draft's).
	inFlight []int
	// staleReplay: the profile lets a changed body get the stored answer
	// (stale_replay_on_mismatch), which the checker then takes as legal.
	staleReplay bool
	operations  []string // WithOperations: the names run, nil all
	keyOps      *keyOps  // each key's operation, for the proxy's ids
}

// Option configures Run.
type Option func(*config)

// WithOps sets how many logical operations run, each a fresh key
// (default 1000).
func WithOps(n int) Option { return func(c *config) { c.ops = n } }

// WithConcurrency sets how many operations are in flight at once
// (default 16).
func WithConcurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// WithFaults adds the proxy's fault rules, parsed once (front.Rules);
// tried in order, the first selected wins.
func WithFaults(rules ...chaos.Rule) Option {
	return func(c *config) { c.faults = append(c.faults, rules...) }
}

// WithSeed seeds the fault draws, the op mix and the backoff jitter
// (default 0).
func WithSeed(seed uint64) Option { return func(c *config) { c.seed = seed } }

// WithHistory keeps the JSONL history at path (default: a temporary file,
// removed after the check).
func WithHistory(path string) Option { return func(c *config) { c.history = path } }

// WithMaxAttempts bounds the attempts of one operation (default 20).
func WithMaxAttempts(n int) Option { return func(c *config) { c.maxAttempts = n } }

// WithDeadline bounds the whole run (default 10m); operations not started
// by then are not run, and the report says so.
func WithDeadline(d time.Duration) Option { return func(c *config) { c.deadline = d } }

// WithKeyGen makes the client-generated keys with gen (default: a UUID per
// operation); the target's --hash-keys or key_source win over it. A
// profile's key_format generator (Profile.NewKey) plugs in here.
func WithKeyGen(gen apispec.KeyGen) Option { return func(c *config) { c.keyGen = gen } }

// WithProgress is called after each finished operation, never
// concurrently.
func WithProgress(f func(Progress)) Option { return func(c *config) { c.onProgress = f } }

// WithReplicas, with a target command (Target.Command), starts n
// processes of it as replicas of one API; the proxy sends attempts to
// them in turn. A target with Replicas (config, --replica) is balanced
// over without starting anything.
func WithReplicas(n int) Option { return func(c *config) { c.replicas = n } }

// WithKillEvery, with WithReplicas, SIGKILLs a random replica this often
// and restarts it (default 0: never).
func WithKillEvery(d time.Duration) Option { return func(c *config) { c.killEvery = d } }

// WithProfile judges attempts as run does under p: those sent later than
// TTL − p's margin after their key's first are not judged against its
// first record (the checker's Margin), and only p's in-flight statuses
// are waited out and retried (another 409 is a business answer). Without
// it the margin is 0 and 409 is the in-flight answer.
func WithProfile(p *apispec.Profile) Option {
	return func(c *config) {
		c.margin = p.Margin
		c.staleReplay = p.StaleReplayOnMismatch == apispec.Yes
		c.inFlight = c.inFlight[:0]
		for _, s := range p.InFlightStatus {
			c.inFlight = append(c.inFlight, apispec.HTTPStatusOf(s))
		}
	}
}

// ErrUnreachable: the target did not answer at all (the preflight every
// face shares, wire.Preflight).
var ErrUnreachable = apispec.ErrUnreachable

// Result is a run's report.
type Result struct {
	chaos.Findings
	// Interrupted: the caller's context ended (SIGINT) before every
	// operation ran; ops cut short are counted, not judged.
	Interrupted bool           `json:"interrupted"`
	Requested   int            `json:"requested_ops"`
	Proxy       chaos.Counters `json:"proxy"`
	Elapsed     time.Duration  `json:"elapsed_ns"`
	History     string         `json:"history,omitempty"`
	// Replicas are the upstreams the proxy balanced over (when several).
	Replicas []string `json:"replicas,omitempty"`
	// Kills counts replicas SIGKILLed and restarted mid-run (WithKillEvery).
	Kills int `json:"kills,omitempty"`
	// Notes say why evidence was left out (a downstream double the API
	// does not call with its keys' tokens), one line each.
	Notes []string `json:"notes,omitempty"`
	// Events is what the events source showed (nil: no events:); its
	// lost and duplicated keys are among the violations.
	Events *EventsReport `json:"events,omitempty"`
}

// validate checks c and fills defaults; errors name the CLI's flag.
func (c *config) validate() error {
	switch {
	case c.target == nil || len(c.target.Operations) == 0:
		return errors.New("target: no operations configured")
	case c.ops < 1:
		return fmt.Errorf("--ops %d: want at least 1", c.ops)
	case c.concurrency < 1:
		return fmt.Errorf("--concurrency %d: want at least 1", c.concurrency)
	case c.maxAttempts < 0:
		return fmt.Errorf("--max-attempts %d: want at least 1", c.maxAttempts)
	case c.deadline < 0:
		return fmt.Errorf("--deadline %v: want a positive duration", c.deadline)
	case c.replicas < 0:
		return fmt.Errorf("--replicas %d: want at least 1", c.replicas)
	case c.replicas > 0 && c.target.Command == "":
		return fmt.Errorf("--replicas %d: needs --target-cmd (or target_cmd) to start them", c.replicas)
	case c.killEvery < 0:
		return fmt.Errorf("--kill-every %v: want a positive duration", c.killEvery)
	}
	if c.maxAttempts == 0 {
		c.maxAttempts = 20
	}
	if c.deadline == 0 {
		c.deadline = 10 * time.Minute
	}
	return nil
}

// Run drives the operations against t through the fault proxy, then
// checks the history. The error is ErrUnreachable (wrapped) when the
// target does not answer, or a setup error (an option out of range
// included); violations are in the Result.
func Run(ctx context.Context, t *apispec.Target, opts ...Option) (*Result, error) {
	t = t.WithDefaults()
	cfg := config{target: t, ops: 1000, concurrency: 16}
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := cfg.selectOperations(); err != nil {
		return nil, err
	}
	cfg.keyOps = &keyOps{}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.deadline)
	defer cancel()
	// The config's downstream double: the API's provider, the per-key
	// oracle and what makes the slow, business and transient kinds behave.
	double, err := evidence.StartDownstream(ctx, cfg.target)
	if err != nil {
		return nil, err
	}
	defer double.Close()
	procs, stopReplicas, err := startReplicas(ctx, &cfg, double)
	if err != nil {
		return nil, err
	}
	defer stopReplicas()
	killing := len(procs) > 0 && cfg.replicas > 0 && cfg.killEvery > 0
	client := wire.Client(cfg.target, cfg.target.Timeout)
	defer client.CloseIdleConnections()
	carrier := wire.NewCarrier(cfg.target, client)
	defer carrier.Close()
	if _, err := wire.Preflight(ctx, cfg.target, carrier, client); err != nil {
		return nil, err
	}
	// No violation is judged on a target whose normal request fails.
	if err := evidence.CheckNormal(ctx, cfg.target, carrier, double, evidence.NormalKeys(cfg.target, client), nil); err != nil {
		return nil, err
	}
	opened, err := evidence.Open(ctx, cfg.target, client, double)
	if err != nil {
		return nil, err
	}
	defer opened.Close()
	// The events source is read once, over the whole history, after the
	// run (checkEvents): as a per-operation probe each count would wait
	// out events.settle.
	evs := opened.Events()
	if opened.EventsOnly() {
		opened = nil
	}
	ev, notes := perKeyEvidence(ctx, opened, carrier, double)

	path, removeTemp, err := historyPath(cfg.history)
	if err != nil {
		return nil, err
	}
	defer removeTemp()
	hist, proxy, err := startProxy(ctx, cfg, path, killing)
	if err != nil {
		return nil, err
	}
	// The kills start with the operations: the preflight, the normal
	// request and the proxy's setup (a gRPC proxy resolves its methods)
	// see every replica up.
	var k *killer
	if killing {
		k = startKiller(ctx, procs, cfg.killEvery, cfg.seed)
		defer k.stop() // before the replicas stop
	}

	gen := cfg.keyGen
	if gen == nil {
		gen = apispec.UUIDKeys
	}
	d := newDriver(cfg, proxy.Calls, hist, wire.NewKeys(cfg.target, client, gen))
	d.ev, d.double, d.direct = ev, double, carrier
	d.onOp = newTracker(cfg, proxy, hist)
	start := time.Now()
	d.runAll(ctx)
	elapsed := time.Since(start)
	kills := k.stop()

	proxy.Close()
	counters := proxy.Counters()
	if err := hist.Close(); err != nil {
		return nil, err
	}
	if err := d.keyError(); err != nil {
		return nil, err
	}
	checker, err := judge(path)
	if err != nil {
		return nil, err
	}
	res := &Result{Findings: checker.Report(), Interrupted: parent.Err() != nil, Requested: cfg.ops, Proxy: counters, Elapsed: elapsed,
		Replicas: cfg.target.Replicas, Kills: kills, Notes: notes}
	if evs != nil && !res.Interrupted {
		er, vs := checkEvents(ctx, evs, checker.Outcomes(), time.Now())
		res.Events = &er
		res.Violations = append(res.Violations, vs...)
	}
	if cfg.history != "" {
		res.History = cfg.history
	}
	return res, nil
}

// startReplicas starts the target command's processes (cfg.replicas, at
// least one) and points cfg.target at them; without a command it starts
// nothing. When replicas are to be killed, a reference process's own
// counts are dropped from the evidence. stop ends the processes.
func startReplicas(ctx context.Context, cfg *config, double *evidence.Downstream) (ms []*managed.Process, stop func(), err error) {
	if cfg.target.Command == "" {
		return nil, func() {}, nil
	}
	t, ms, err := managed.StartReplicas(ctx, cfg.target, max(cfg.replicas, 1), double.URL())
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	if cfg.replicas > 0 && cfg.killEvery > 0 {
		// A restarted reference process forgets the executions it
		// counted; the created ids seen by client and proxy decide.
		// The downstream double's counts outlive the restarts.
		if t.Oracle != nil && t.Oracle.Downstream == "" {
			t.Oracle = nil
		}
		t.Operations = slices.Clone(t.Operations) // t is a shallow copy
		for i := range t.Operations {
			if o := t.Operations[i].Oracle; o != nil && o.Downstream == "" {
				t.Operations[i].Oracle = nil
			}
		}
	}
	cfg.target = t
	double.Started(t) // its check calls the started processes
	return ms, func() {
		for _, m := range ms {
			m.Stop()
		}
	}, nil
}

// perKeyEvidence is the evidence that may judge one key's executions (nil:
// ids decide), with a note when a downstream double was left out.
func perKeyEvidence(ctx context.Context, ev *evidence.Evidence, carrier wire.Carrier, double *evidence.Downstream) (*evidence.Evidence, []string) {
	var notes []string
	if ev != nil {
		// A downstream double counts only once one request is seen to
		// call it with its key's token (calibration, as run does).
		note, ok := double.Check(ctx, carrier)
		if note != "" {
			notes = append(notes, note)
		}
		if !ok {
			ev = nil
		}
	}
	if ev != nil && !ev.PerKey() {
		// A global count moves with every concurrent key: it cannot say
		// how often one key executed. Ids decide.
		ev = nil
	}
	return ev, notes
}

// historyPath is where the run's history goes: the given file, else a
// temporary one that remove deletes.
func historyPath(given string) (path string, remove func(), err error) {
	if given != "" {
		return given, func() {}, nil
	}
	f, err := os.CreateTemp("", "idemcheck-history-*.jsonl")
	if err != nil {
		return "", nil, err
	}
	path = f.Name()
	f.Close()
	return path, func() { os.Remove(path) }, nil
}

// startProxy opens the history at path, writes its run line and starts
// the fault proxy recording into it, listening on loopback, in front of
// every replica (front.Start, as the cases start theirs). Every
// operation's method is resolved now, before any replica is killed.
func startProxy(ctx context.Context, cfg config, path string, kills bool) (*chaos.History, *front.Front, error) {
	hist, err := chaos.CreateHistory(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := front.Start(ctx, cfg.target, front.Options{History: hist, Seed: cfg.seed, Replicas: true,
		Marks: cfg.keyOps.mark, Timeout: cfg.target.Timeout, Conns: 1024, Resolve: true})
	if err != nil {
		hist.Close()
		return nil, nil, err
	}
	for _, r := range cfg.faults {
		if err := f.Add(r); err != nil {
			f.Close()
			hist.Close()
			return nil, nil, err
		}
	}
	// The history carries the TTL so analyze judges it as this run does.
	hist.WriteRun(chaos.Run{TTLNS: cfg.target.TTL.Nanoseconds(), MarginNS: cfg.margin.Nanoseconds(), ReplicaKills: kills, Protocol: f.Protocol, StaleReplay: cfg.staleReplay})
	return hist, f, nil
}

// judge runs the exactly-once checker over the closed history at path.
func judge(path string) (*chaos.Checker, error) {
	checker := chaos.NewChecker()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := chaos.ReadHistory(f, checker, false); err != nil {
		return nil, err
	}
	return checker, nil
}

// plan assigns each operation index its shape, reproducibly from the seed.
func plan(cfg config) []shape {
	rng := rand.New(rand.NewPCG(cfg.seed, 0x51ed))
	out := make([]shape, cfg.ops)
	for i := range out {
		op := &cfg.target.Operations[i%len(cfg.target.Operations)]
		s := shape{op: op, kind: chaos.KindNormal}
		// A mix that exercises every defect the harness can see: slow
		// storms (in-flight locking), changed-body retries (fingerprint),
		// business errors (4xx caching) and transient errors (5xx not
		// cached); each only when the target configures it.
		switch r := rng.IntN(100); {
		case r < 4 && hasVariant(op, apispec.VariantSlow):
			s.kind = chaos.KindStorm
		case r < 8 && hasBodyMutation(op):
			s.kind = chaos.KindMutated
		case r < 12 && hasVariant(op, apispec.VariantBusinessError):
			s.kind = chaos.KindBusiness
		case r < 16 && hasVariant(op, apispec.VariantTransientError):
			s.kind = chaos.KindTransient
		}
		out[i] = s
	}
	return out
}

func hasBodyMutation(op *apispec.Operation) bool {
	_, ok := op.BodyMutation()
	return ok
}

func hasVariant(op *apispec.Operation, name string) bool {
	_, ok := op.Variants[name]
	return ok
}

type shape struct {
	op   *apispec.Operation
	kind string
}

func (d *driver) runAll(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	shapes := plan(d.cfg)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(d.cfg.concurrency, d.cfg.ops) {
		wg.Go(func() {
			for i := range next {
				op, ok := d.run(ctx, shapes[i])
				if !ok {
					cancel() // no key: the run stops, Run reports why
					continue
				}
				d.hist.WriteOp(op)
				if d.onOp != nil {
					d.onOp(op)
				}
			}
		})
	}
feed:
	for i := range shapes {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
}

// statusText shortens an error for the report.
func statusText(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && len(s) > 120 {
		s = s[i+2:]
	}
	return s
}

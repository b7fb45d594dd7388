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

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/target"
	"github.com/idemcheck/idemcheck/wire"
)

// Config is one chaos run.
type Config struct {
	Target      *target.Target
	Ops         int          // logical operations, each a fresh key
	Concurrency int          // operations in flight at once
	Faults      []chaos.Rule // parsed once (chaos.ParseRules)
	Seed        uint64
	// History is the JSONL file to keep; "" writes a temporary one.
	History string
	// MaxAttempts bounds the attempts of one operation (default 20).
	MaxAttempts int
	// Deadline bounds the whole run (default 10m); operations not
	// started by then are not run, and the report says so.
	Deadline time.Duration
	// KeyGen makes the client-generated keys (default: a UUID per
	// operation); the target's --hash-keys or key_source win over it. A
	// profile's key_format generator (Profile.NewKey) plugs in here.
	KeyGen target.KeyGen
	// OnProgress, when set, is called after each finished operation,
	// never concurrently.
	OnProgress func(Progress)
	// Replicas, with a target command (Target.Command), is how many
	// processes of it to start as replicas of one API; the proxy sends
	// attempts to them in turn. A target with Replicas (config, --replica)
	// is balanced over without starting anything.
	Replicas int
	// KillEvery, with Replicas, SIGKILLs a random replica this often and
	// restarts it (0: never).
	KillEvery time.Duration
	// Margin is the profile's margin before the target's TTL: attempts
	// sent later than TTL − Margin after a key's first are not judged
	// against its first record (the checker's Margin).
	Margin time.Duration
}

// ErrUnreachable: the target did not answer at all (the preflight every
// face shares, wire.Preflight), or an operation's normal request did not
// succeed (evidence.CheckNormal, evidence.ErrNotWorking).
var ErrUnreachable = target.ErrUnreachable

// Result is a run's report.
type Result struct {
	chaos.Report
	// Interrupted: the caller's context ended (SIGINT) before every
	// operation ran; ops cut short are counted, not judged.
	Interrupted bool           `json:"interrupted"`
	Requested   int            `json:"requested_ops"`
	Proxy       chaos.Counters `json:"proxy"`
	Elapsed     time.Duration  `json:"elapsed_ns"`
	History     string         `json:"history,omitempty"`
	// Replicas are the upstreams the proxy balanced over (when several).
	Replicas []string `json:"replicas,omitempty"`
	// Kills counts replicas SIGKILLed and restarted mid-run (KillEvery).
	Kills int `json:"kills,omitempty"`
	// Notes say why evidence was left out (a downstream double the API
	// does not call with its keys' tokens), one line each.
	Notes []string `json:"notes,omitempty"`
	// Events is what the events source showed (nil: no events:); its
	// lost and duplicated keys are among the violations.
	Events *EventsReport `json:"events,omitempty"`
}

// Validate checks cfg and fills defaults; errors name the field.
func (c *Config) Validate() error {
	switch {
	case c.Target == nil || len(c.Target.Operations) == 0:
		return errors.New("target: no operations configured")
	case c.Ops < 1:
		return fmt.Errorf("--ops %d: want at least 1", c.Ops)
	case c.Concurrency < 1:
		return fmt.Errorf("--concurrency %d: want at least 1", c.Concurrency)
	case c.MaxAttempts < 0:
		return fmt.Errorf("--max-attempts %d: want at least 1", c.MaxAttempts)
	case c.Deadline < 0:
		return fmt.Errorf("--deadline %v: want a positive duration", c.Deadline)
	case c.Replicas < 0:
		return fmt.Errorf("--replicas %d: want at least 1", c.Replicas)
	case c.Replicas > 0 && c.Target.Command == "":
		return fmt.Errorf("--replicas %d: needs --target-cmd (or target_cmd) to start them", c.Replicas)
	case c.KillEvery < 0:
		return fmt.Errorf("--kill-every %v: want a positive duration", c.KillEvery)
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 20
	}
	if c.Deadline == 0 {
		c.Deadline = 10 * time.Minute
	}
	return nil
}

// Run executes cfg. The error is ErrUnreachable (wrapped) when the target
// does not answer, or a setup error; violations are in the Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.Deadline)
	defer cancel()
	// The config's downstream double: the API's provider, the per-key
	// oracle and what makes the slow, business and transient kinds behave.
	double, err := evidence.StartDownstream(ctx, cfg.Target)
	if err != nil {
		return nil, err
	}
	defer double.Close()
	var killer *killer
	if cfg.Target.Command != "" {
		t, ms, err := target.StartReplicas(ctx, cfg.Target, max(cfg.Replicas, 1), double.URL())
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
		}
		defer func() {
			for _, m := range ms {
				m.Stop()
			}
		}()
		if cfg.Replicas > 0 && cfg.KillEvery > 0 {
			killer = startKiller(ctx, ms, cfg.KillEvery, cfg.Seed)
			defer killer.stop() // before the replicas stop, on every return
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
		cfg.Target = t
	}
	client := wire.Client(cfg.Target, cfg.Target.Timeout)
	defer client.CloseIdleConnections()
	if err := wire.Preflight(ctx, cfg.Target, client); err != nil {
		return nil, err
	}
	// No violation is judged on a target whose normal request fails.
	if err := evidence.CheckNormal(ctx, cfg.Target, client, double, evidence.NormalKeys(cfg.Target, client), nil); err != nil {
		return nil, err
	}
	ev, err := evidence.Open(ctx, cfg.Target, client, double)
	if err != nil {
		return nil, err
	}
	defer ev.Close()
	// The events source is read once, over the whole history, after the
	// run (checkEvents): as a per-operation probe each count would wait
	// out events.settle.
	evs := ev.Events()
	if ev.EventsOnly() {
		ev = nil
	}
	var notes []string
	if ev != nil {
		// A downstream double counts only once one request is seen to
		// call it with its key's token (calibration, as run does).
		note, ok := double.Check(ctx, client)
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

	path := cfg.History
	if path == "" {
		f, err := os.CreateTemp("", "idemcheck-history-*.jsonl")
		if err != nil {
			return nil, err
		}
		path = f.Name()
		f.Close()
		defer os.Remove(path)
	}
	hist, err := chaos.CreateHistory(path)
	if err != nil {
		return nil, err
	}
	// The history carries the TTL so analyze judges it as this run does.
	hist.WriteRun(chaos.Run{TTLNS: cfg.Target.TTL.Nanoseconds(), MarginNS: cfg.Margin.Nanoseconds(), ReplicaKills: killer != nil})
	idPtr := cfg.Target.Operations[0].IDPointer
	proxy, err := chaos.New(chaos.Options{
		Upstream: cfg.Target.Bases()[0], Replicas: cfg.Target.Bases()[1:], KeyHeader: cfg.Target.KeyHeader, IDPointer: idPtr,
		Transport: wire.Transport(cfg.Target, 1024), History: hist, Seed: cfg.Seed, Timeout: cfg.Target.Timeout,
	})
	if err != nil {
		hist.Close()
		return nil, err
	}
	for _, r := range cfg.Faults {
		proxy.Add(r)
	}
	front, err := chaos.Listen(proxy)
	if err != nil {
		hist.Close()
		return nil, err
	}

	gen := cfg.KeyGen
	if gen == nil {
		gen = target.UUIDKeys
	}
	d := newDriver(cfg, client, front.URL, hist, wire.NewKeys(cfg.Target, client, gen))
	d.ev, d.double = ev, double
	d.onOp = newTracker(cfg, proxy, hist)
	start := time.Now()
	d.runAll(ctx)
	elapsed := time.Since(start)
	kills := killer.stop()

	front.Close()
	proxy.Close()
	counters := proxy.Counters()
	if err := hist.Close(); err != nil {
		return nil, err
	}
	if err := d.keyError(); err != nil {
		return nil, err
	}
	checker := chaos.NewChecker()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := chaos.ReadHistory(f, checker, false); err != nil {
		return nil, err
	}
	res := &Result{Report: checker.Report(), Interrupted: parent.Err() != nil, Requested: cfg.Ops, Proxy: counters, Elapsed: elapsed,
		Replicas: cfg.Target.Replicas, Kills: kills, Notes: notes}
	if evs != nil && !res.Interrupted {
		er, vs := checkEvents(ctx, evs, checker.Outcomes(), time.Now())
		res.Events = &er
		res.Violations = append(res.Violations, vs...)
	}
	if cfg.History != "" {
		res.History = cfg.History
	}
	return res, nil
}

// plan assigns each operation index its shape, reproducibly from the seed.
func plan(cfg Config) []shape {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x51ed))
	out := make([]shape, cfg.Ops)
	for i := range out {
		op := &cfg.Target.Operations[i%len(cfg.Target.Operations)]
		s := shape{op: op, kind: chaos.KindNormal}
		// A mix that exercises every defect the harness can see: slow
		// storms (in-flight locking), changed-body retries (fingerprint),
		// business errors (4xx caching) and transient errors (5xx not
		// cached); each only when the target configures it.
		switch r := rng.IntN(100); {
		case r < 4 && hasVariant(op, target.VariantSlow):
			s.kind = chaos.KindStorm
		case r < 8 && len(op.Mutations) > 0:
			s.kind = chaos.KindMutated
		case r < 12 && hasVariant(op, target.VariantBusinessError):
			s.kind = chaos.KindBusiness
		case r < 16 && hasVariant(op, target.VariantTransientError):
			s.kind = chaos.KindTransient
		}
		out[i] = s
	}
	return out
}

func hasVariant(op *target.Operation, name string) bool {
	_, ok := op.Variants[name]
	return ok
}

type shape struct {
	op   *target.Operation
	kind string
}

func (d *driver) runAll(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	shapes := plan(d.cfg)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(d.cfg.Concurrency, d.cfg.Ops) {
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

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/reports/loadreport"
	"github.com/idemcheck/idemcheck/scenarios"
)

type loadFlags struct {
	sel                scenarios.Selection
	mode               string
	rate               int
	duration           time.Duration
	plan               string
	hitRatio           float64
	pool, hotKeys      int
	workers, maxWork   uint64
	timeout            time.Duration
	ttl                time.Duration
	operation, variant string
	bodyPatch          string
	results            string
	judge              loadJudging
	out                loadOutputs
	verbose            bool
	shard              string
}

// loadJudging is how both `load` and `load report` judge the results.
type loadJudging struct {
	verySlow      time.Duration
	maxErrorShare float64
	thresholds    []string
	// allowIncomplete: most answers not judged is exit 0, not 5.
	allowIncomplete bool
}

func (j *loadJudging) register(fl *pflag.FlagSet) {
	fl.DurationVar(&j.verySlow, "very-slow", time.Second, "latency counted as very slow, printed beside percentiles")
	fl.Float64Var(&j.maxErrorShare, "max-error-share", load.DefaultMaxErrorShare, "share (0..1) of transport errors and unexpected 5xx a path may have before the run fails")
	fl.StringArrayVar(&j.thresholds, "threshold", nil, "k6-style pass condition, repeatable, e.g. 'hit.p99<5ms'")
	addAllowIncompleteFlag(fl, &j.allowIncomplete, incompleteLoad)
}

// check refuses a --max-error-share that is no share.
func (j *loadJudging) check() error {
	if j.maxErrorShare < 0 || j.maxErrorShare > 1 {
		return usageErrorf("--max-error-share %v: want 0..1", j.maxErrorShare)
	}
	return nil
}

// loadOutputs are the files both `load` and `load report` can write.
type loadOutputs struct {
	json, html, hdr string
}

func (o *loadOutputs) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	addJSONFlag(fl, &o.json, "schema idemcheck.load/v1")
	addHTMLFlag(fl, &o.html, "latency over time per path, percentile table, thresholds, violations")
	fl.StringVar(&o.hdr, "hdr", "", "write the HDR percentile plot of the paths (SVG) to `FILE`")
}

func init() {
	var f loadFlags
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Load an idempotent API: hit vs miss vs contention latency, correctness under load, thresholds",
		Long: "Drive vegeta attacks that separate the replay path (hit) from the execute path (miss),\n" +
			"hammer hot keys (contention) or send no key (nokey baseline). Checks that replays equal\n" +
			"their originals and that the effects oracle counts one execution per key.\n" +
			"A gRPC target (--config with base_url grpc://, key: and rpc: operations) runs the same modes\n" +
			"on a paced open-model client: every send the plan schedules, latency timed from its intended\n" +
			"send (docs/load.md, gRPC targets).\n\n" +
			"Plans: RATE@DUR, RATE->RATE@DUR (ramp), sine(MEAN,AMP,PERIOD)@DUR, max@DUR; space-separated.\n" +
			"Thresholds: PATH.STAT OP VALUE, PATH.STAT/PATH.STAT OP N, violations OP N\n" +
			"  (paths hit miss contention nokey; stats min mean p50 p90 p99 p99.9 max requests rate throughput success very_slow).\n" +
			"An answer to a request sent later than TTL − margin after its key's first request (config ttl\n" +
			"or --ttl; the profile's margin) may legally be a fresh execution: not judged.\n" +
			"A path fails the run outright when none of its requests got an expected answer or more than\n" +
			"--max-error-share of them were transport errors or unexpected 5xx, thresholds or not.\n" +
			"SIGINT/SIGTERM stops the attack; the partial report is written and says interrupted.\n" +
			"Replays are compared under the profile's replay_compare (bytes, the JSON document, or the\n" +
			"status) and executions told apart by created ids at the operation's id_pointer, as in run.\n" +
			"The report says how many answers were judged, how many were not and why.\n" +
			"Go's collector runs at GOGC=400 unless GOGC is set (at saturation: 9-14 % less CPU per HTTP\n" +
			"request, a fifth less per gRPC call, some 11 MB more memory; docs/load.md, The collector).\n" +
			"Exit codes: 0 ok, 1 a failed path (before thresholds) or violations (double execution, wrong\n" +
			"replay), 2 usage, 3 threshold breached, 4 unreachable, 5 most answers not judged (keys that\n" +
			"may have expired: a target TTL shorter than the run; --allow-incomplete accepts it), 130\n" +
			"interrupted.",
		Example: `  idemcheck load --target http://127.0.0.1:8080 --mode mix --hit-ratio 0.9 --rate 500 --duration 10s --threshold 'hit.p99<5ms' --threshold 'violations==0'
  idemcheck load --config examples/reference.yaml --mode contention --plan '100@10s 1000@30s' --html load.html --results run-a.bin
  idemcheck load --config examples/grpc.yaml --mode mix --rate 1000 --duration 10s --threshold 'hit.p50/miss.p50<1'
  idemcheck load report run-a.bin run-b.bin --json merged.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLoad(cmd, f)
		},
	}
	fl := cmd.Flags()
	addTargetFlag(fl, &f.sel.Target)
	addConfigFlag(fl, &f.sel.Config, "")
	addProfileFlag(fl, &f.sel.Profile, "its replay_compare and margin judge replays, as in run")
	fl.StringVar(&f.mode, "mode", "mix", "key strategy: miss, hit, mix, contention, nokey")
	fl.IntVar(&f.rate, "rate", 100, "requests per second (constant plan)")
	fl.DurationVar(&f.duration, "duration", 5*time.Second, "measured duration (constant plan)")
	fl.StringVar(&f.plan, "plan", "", `rate plan, e.g. "100@10s 1000@30s" (overrides --rate/--duration)`)
	fl.Float64Var(&f.hitRatio, "hit-ratio", 0.9, "share of hits in mix mode (0..1)")
	fl.IntVar(&f.pool, "pool", 100, "keys completed in warm-up and replayed as hits")
	fl.IntVar(&f.hotKeys, "hot-keys", 4, "keys contention mode hammers at once")
	fl.Uint64Var(&f.workers, "workers", 32, "initial workers = connections opened before the measured window (gRPC: one connection carries all)")
	fl.Uint64Var(&f.maxWork, "max-workers", 512, "upper bound on workers (vegeta's, or the paced gRPC client's) and connections")
	addTimeoutFlag(fl, &f.timeout, "")
	addTTLFlag(fl, &f.ttl, "the config", "a replay after it may legally execute anew")
	fl.StringVar(&f.operation, "operation", "", "operation name (default: the target's first)")
	fl.StringVar(&f.variant, "variant", "", "apply a declared variant to every request (contention defaults to slow)")
	fl.StringVar(&f.bodyPatch, "body-patch", "", `JSON merge patch applied to the request body, e.g. '{"delay_ms":50}'`)
	fl.StringVar(&f.results, "results", "", "write every result as vegeta gob to FILE (merge runs with 'idemcheck load report')")
	f.judge.register(fl)
	addVerboseFlag(fl, &f.verbose, "")
	addReplicaFlag(fl, &f.sel.Replicas)
	fl.StringVar(&f.shard, "shard", "", "run shard I of N (I/N, 0-based, e.g. $(JOB_COMPLETION_INDEX)/3): the same plan with a disjoint key space; merge the shards' --results with 'idemcheck load report'")
	reachFlags(fl, &f.sel)
	f.out.register(cmd)
	cmd.AddCommand(newLoadReportCmd())
	rootCmd.AddCommand(cmd)
}

// loadTarget resolves --target or --config (with --base-url, TLS and key
// flags) into a Target and its profile (usage errors: 2).
func loadTarget(f *loadFlags) (*apispec.Target, *apispec.Profile, error) {
	if f.sel.Config == "" && f.sel.Target == "" {
		return nil, nil, usageErrorf("--target URL or --config FILE is required")
	}
	// A gRPC target is loaded with the paced client (load/paced.go); its
	// key place and rpc: operations come from a config.
	if err := apispec.NotForRPCs(f.sel.Target, "load: a gRPC target needs --config (its key: and rpc: operations; copy examples/grpc.yaml), not --target "+f.sel.Target); f.sel.Config == "" && err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	t, p, err := f.sel.Load()
	if err != nil {
		return nil, nil, withCode(exitUsage, err)
	}
	return t, p, nil
}

// parseThresholds reads every --threshold and, when mode is known, refuses
// thresholds on paths the mode never sends.
func parseThresholds(exprs []string, mode load.Mode) ([]load.Threshold, error) {
	var out []load.Threshold
	for _, e := range exprs {
		th, err := load.ParseThreshold(e)
		if err != nil {
			return nil, withCode(exitUsage, fmt.Errorf("--threshold: %w", err))
		}
		if mode != "" {
			for _, p := range th.Paths() {
				ok := false
				for _, q := range mode.Produces() {
					ok = ok || p == q
				}
				if !ok {
					return nil, usageErrorf("--threshold %q: mode %s sends no %s requests", e, mode, p)
				}
			}
		}
		out = append(out, th)
	}
	return out, nil
}

func loadOptions(cmd *cobra.Command, f *loadFlags) ([]load.Option, load.Mode, error) {
	mode, err := load.ParseMode(f.mode)
	if err != nil {
		return nil, "", withCode(exitUsage, fmt.Errorf("--mode: %w", err))
	}
	var plan load.Plan
	if f.plan != "" {
		if cmd.Flags().Changed("rate") || cmd.Flags().Changed("duration") {
			return nil, "", usageErrorf("--plan replaces --rate/--duration: give one or the other")
		}
		if plan, err = load.ParsePlan(f.plan); err != nil {
			return nil, "", withCode(exitUsage, fmt.Errorf("--plan: %w", err))
		}
	} else if plan, err = load.Constant(f.rate, f.duration); err != nil {
		return nil, "", withCode(exitUsage, fmt.Errorf("--rate %d --duration %s: %w", f.rate, f.duration, err))
	}
	opts := []load.Option{
		load.WithMode(mode), load.WithPlan(plan), load.WithHitRatio(f.hitRatio),
		load.WithPool(f.pool), load.WithHotKeys(f.hotKeys), load.WithWorkers(f.workers, f.maxWork),
		load.WithTimeout(f.timeout), load.WithVerySlow(f.judge.verySlow),
		load.WithOperation(f.operation), load.WithVariant(f.variant),
	}
	if f.ttl < 0 {
		return nil, "", usageErrorf("--ttl %s: want a positive duration", f.ttl)
	}
	if f.ttl > 0 {
		opts = append(opts, load.WithTTL(f.ttl))
	}
	if err := f.judge.check(); err != nil {
		return nil, "", err
	}
	if f.bodyPatch != "" {
		if !json.Valid([]byte(f.bodyPatch)) {
			return nil, "", usageErrorf("--body-patch %q: not valid JSON", f.bodyPatch)
		}
		opts = append(opts, load.WithBodyPatch(json.RawMessage(f.bodyPatch)))
	}
	if f.shard != "" {
		s, err := load.ParseShard(f.shard)
		if err != nil {
			return nil, "", withCode(exitUsage, fmt.Errorf("--shard: %w", err))
		}
		opts = append(opts, load.WithShard(s))
	}
	return opts, mode, nil
}

func runLoad(cmd *cobra.Command, f loadFlags) error {
	tuneLoadGC()
	t, profile, err := loadTarget(&f)
	if err != nil {
		return err
	}
	opts, mode, err := loadOptions(cmd, &f)
	if err != nil {
		return err
	}
	// Replays and executions are judged as `run` judges them.
	opts = append(opts, load.WithProfile(profile))
	ths, err := parseThresholds(f.judge.thresholds, mode)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // a second Ctrl-C kills at once
	var results *bufio.Writer
	if f.results != "" {
		file, err := os.Create(f.results)
		if err != nil {
			return usageErrorf("--results: %v", err)
		}
		defer file.Close()
		results = bufio.NewWriterSize(file, 1<<20)
		opts = append(opts, load.WithResults(results))
	}
	if f.out.html != "" {
		opts = append(opts, load.WithTimePlot())
	}
	progressOpt, stopProgress := loadProgress(cmd.OutOrStdout(), cmd.ErrOrStderr(), f.verbose)
	rep, err := load.Run(ctx, t, append(opts, progressOpt)...)
	stopProgress()
	if results != nil && err == nil {
		if ferr := results.Flush(); ferr != nil {
			err = fmt.Errorf("--results: %w", ferr)
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return withCode(exitInterrupted, fmt.Errorf("interrupted before the measured window: %v", err))
	case errors.Is(err, load.ErrUnreachable):
		return withCode(exitUnreachable, err)
	case errors.Is(err, load.ErrConfig), errors.Is(err, apispec.ErrKeySource), errors.Is(err, apispec.ErrTTLFrom):
		return withCode(exitUsage, err)
	case err != nil:
		return withCode(exitFail, err)
	}
	return finishLoad(cmd.OutOrStdout(), rep, ths, f.out, f.judge)
}

// finishLoad evaluates thresholds and the paths' health, writes every
// requested output and maps the verdict to an exit code: 130 if
// interrupted, else 1 if a path failed outright (thresholds or not), else
// 3 if a threshold breached, else 1 if the run saw violations.
func finishLoad(stdout io.Writer, rep *load.Summary, ths []load.Threshold, out loadOutputs, judge loadJudging) error {
	rep.ApplyThresholds(ths)
	rep.CheckHealth(judge.maxErrorShare)
	if err := loadreport.Console(stdout, rep); err != nil {
		return err
	}
	write := func(name string, fn func(io.Writer, *load.Summary) error) error {
		if name == "" {
			return nil
		}
		fh, err := os.Create(name)
		if err != nil {
			return err
		}
		if err := fn(fh, rep); err != nil {
			fh.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		return fh.Close()
	}
	for _, o := range []struct {
		name string
		fn   func(io.Writer, *load.Summary) error
	}{{out.json, loadreport.JSON}, {out.html, loadreport.HTML}, {out.hdr, loadreport.HDRPlot}} {
		if err := write(o.name, o.fn); err != nil {
			return withCode(exitFail, err)
		}
	}
	if rep.Interrupted {
		return withCode(exitInterrupted, errors.New("interrupted: partial report; requests cut short are not judged"))
	}
	if len(rep.Failures) > 0 {
		var parts []string
		for _, f := range rep.Failures {
			parts = append(parts, fmt.Sprintf("%s: %s", f.Path, f.Reason))
		}
		return withCode(exitFail, fmt.Errorf("load failed: %s", strings.Join(parts, "; ")))
	}
	if b := rep.Breached(); len(b) > 0 {
		var parts []string
		for _, t := range b {
			parts = append(parts, fmt.Sprintf("%s (value %s)", t.Expr, t.Value))
		}
		return withCode(exitThreshold, fmt.Errorf("threshold breached: %s", strings.Join(parts, "; ")))
	}
	if rep.Violations > 0 {
		return withCode(exitFail, fmt.Errorf("%d idempotency violations under load", rep.Violations))
	}
	if rep.MostlyUnjudged() && !judge.allowIncomplete {
		return withCode(exitIncomplete, fmt.Errorf("%d of %d answers not judged: not enough evidence (--allow-incomplete accepts this)",
			rep.NotJudgedCount(), rep.NotJudgedCount()+rep.Judged))
	}
	return nil
}

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/chaos/drive"
	"github.com/idemcheck/idemcheck/chaos/front"
	"github.com/idemcheck/idemcheck/reports/chaosreport"
	"github.com/idemcheck/idemcheck/scenarios"
)

type chaosFlags struct {
	sel      scenarios.Selection
	targets  []string // --target, repeatable: the later ones are replicas
	run      chaosRun
	faults   []string // parsed once into drive.WithFaults
	jsonPath string
	htmlPath string
	verbose  bool
	// allowIncomplete: no operation executed, or more keys not judged
	// than judged, is exit 0, not 5.
	allowIncomplete bool
	stderr          io.Writer // progress goes here
}

// chaosRun is what the flags ask of drive.Run.
type chaosRun struct {
	ops, concurrency int
	seed             uint64
	history          string
	maxAttempts      int
	deadline         time.Duration
	replicas         int
	killEvery        time.Duration
	operations       []string // --operation: the operations driven, none all
}

// options are r's drive.Run options.
func (r chaosRun) options() []drive.Option {
	return []drive.Option{drive.WithOps(r.ops), drive.WithConcurrency(r.concurrency), drive.WithSeed(r.seed),
		drive.WithHistory(r.history), drive.WithMaxAttempts(r.maxAttempts), drive.WithDeadline(r.deadline),
		drive.WithReplicas(r.replicas), drive.WithKillEvery(r.killEvery), drive.WithOperations(r.operations...)}
}

func init() {
	var f chaosFlags
	cmd := &cobra.Command{
		Use:   "chaos (--config FILE | --target URL) --ops N --concurrency C --fault SPEC...",
		Short: "Drive operations through the fault proxy and check exactly-once per key",
		Long: "Start an in-process fault proxy in front of the target (any http or https URL; for a gRPC\n" +
			"config's grpc:// service a gRPC proxy, with the faults that have a gRPC form: docs/grpc.md),\n" +
			"drive --ops logical operations through it with a retrying client (same key on every retry, exponential backoff\n" +
			"with jitter, honours 409 and Retry-After), then check every key: exactly one execution\n" +
			"(created ids seen by client and proxy, plus the effects oracle), the client's final answer\n" +
			"equals the committed result, nothing lost. The op mix adds slow same-key storms, changed-body\n" +
			"retries, business and transient errors where the target configures them. With the target's\n" +
			"TTL (config ttl or --ttl) an execution from an attempt sent later than TTL − margin (the\n" +
			"profile's) after the key's first is a legal fresh execution, shown apart; without it every\n" +
			"second execution is a violation. An answer the harness dropped, cut or made up is no evidence\n" +
			"against the server: a key whose every answer it dropped is not judged, never lost. The verdict\n" +
			"says how many keys were judged, how many not and why.\n" +
			"Replicas: with --replica or --target repeated (or the config's replicas) the proxy (HTTP or gRPC) sends attempts to each\n" +
			"replica in turn, so a key's retries land on different replicas. With --target-cmd CMD --replicas N it starts\n" +
			"N processes of CMD ({port} becomes each one's port; CMD must name a shared store) and every\n" +
			"--kill-every SIGKILLs a random one and restarts it; the effects oracle is then not asked (a\n" +
			"restarted process forgets its counts) and created ids decide.\n" +
			"SIGINT/SIGTERM stops sending; operations cut short are counted, not judged.\n" +
			"Exit codes: 0 clean, 1 violations, 2 usage, 4 target unreachable, 5 not enough evidence (no\n" +
			"operation shows an execution, or more keys not judged than judged; --allow-incomplete accepts\n" +
			"it), 130 interrupted.",
		Example: `  idemcheck chaos --target http://127.0.0.1:8080 --ops 500 --concurrency 16 --fault drop-response:0.3 --fault duplicate:0.1
  idemcheck chaos --config examples/reference.yaml --ops 2000 --fault drop-response:p=0.3,mode=rst --seed 7 --history chaos.jsonl --json chaos.json --html chaos.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			context.AfterFunc(ctx, stop) // a second Ctrl-C kills at once
			f.stderr = cmd.ErrOrStderr()
			return runChaos(ctx, cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	addConfigFlag(fl, &f.sel.Config, "")
	addProfileFlag(fl, &f.sel.Profile, "its margin before the TTL judges attempts, as in run")
	fl.StringArrayVar(&f.targets, "target", nil, withNote(targetUsage, "repeated, the others are replicas of the first (like --replica)"))
	addReplicaFlag(fl, &f.sel.Replicas)
	addTargetCmdFlag(fl, &f.sel.TargetCmd, "")
	fl.IntVar(&f.run.replicas, "replicas", 0, "with --target-cmd: start this many processes of it as replicas of one API")
	fl.DurationVar(&f.run.killEvery, "kill-every", 2*time.Second, "with --replicas: SIGKILL a random replica this often and restart it (0: never)")
	addTTLFlag(fl, &f.sel.TTL, "the config", "executions after it are legal")
	addLeaseFlag(fl, &f.sel.Lease) // retries answered in flight wait out a killed attempt's lease
	fl.IntVar(&f.run.ops, "ops", 1000, "logical operations, each with a fresh key")
	fl.StringArrayVar(&f.run.operations, "operation", nil, "drive only this configured operation (by name; repeatable; default: all, in turn)")
	fl.IntVar(&f.run.concurrency, "concurrency", 16, "operations in flight at once")
	addFaultFlag(fl, &f.faults)
	fl.Uint64Var(&f.run.seed, "seed", 1, "seed of fault draws, op mix and backoff jitter")
	addHistoryFlag(fl, &f.run.history)
	addJSONFlag(fl, &f.jsonPath, "")
	addHTMLFlag(fl, &f.htmlPath, htmlChaos)
	fl.IntVar(&f.run.maxAttempts, "max-attempts", 20, "attempts per operation before giving up")
	fl.DurationVar(&f.run.deadline, "deadline", 10*time.Minute, "bound on the whole run")
	addVerboseFlag(fl, &f.verbose, "")
	addAllowIncompleteFlag(fl, &f.allowIncomplete, incompleteChaos)
	reachFlags(fl, &f.sel)
	rootCmd.AddCommand(cmd)
}

func runChaos(ctx context.Context, stdout io.Writer, f chaosFlags) error {
	if len(f.targets) > 0 {
		f.sel.Target = f.targets[0]
		f.sel.Replicas = append(slices.Clone(f.targets[1:]), f.sel.Replicas...)
	}
	target, profile, err := f.sel.Load()
	if err != nil {
		return withCode(exitUsage, err)
	}
	if target.HTTP2 {
		return usageErrorf("--http2 (or the config's http2: true): chaos injects its faults over HTTP/1.1 only (it cuts connections mid-answer); check an API over HTTP/2 with run --http2 or load --http2")
	}
	// A gRPC target gets the gRPC proxy and the faults' gRPC forms; a
	// fault without one is refused, never applied over HTTP.
	rules, err := front.Rules(target, f.faults)
	if err != nil {
		return usageErrorf("--fault: %v", err)
	}
	tempHistory := f.htmlPath != "" && f.run.history == ""
	if tempHistory {
		// The page is drawn from the history: keep one until then.
		tmp, err := os.CreateTemp("", "idemcheck-history-*.jsonl")
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--html: %v", err))
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		f.run.history = tmp.Name()
	}
	progressOpt, stopProgress := chaosProgress(stdout, f.stderr, f.verbose, f.run.ops)
	opts := append(f.run.options(), drive.WithFaults(rules...), drive.WithProfile(profile), progressOpt)
	res, err := drive.Run(ctx, target, opts...)
	stopProgress()
	if err != nil && ctx.Err() != nil {
		return withCode(exitInterrupted, fmt.Errorf("interrupted before the run started: %v", err))
	}
	if errors.Is(err, drive.ErrUnreachable) {
		return withCode(exitUnreachable, err)
	}
	if err != nil {
		return withCode(exitUsage, err)
	}
	if tempHistory {
		res.History = "" // not the user's to keep, nor to name in the reports
	}
	against := target.Redact(target.BaseURL)
	if target.Command != "" { // started by the run: base_url is at most a template ({port})
		against = "--target-cmd"
	}
	chaosreport.Header(stdout, res, against, target.Redact)
	chaosreport.Console(stdout, res.Findings)
	if f.htmlPath != "" {
		run := chaosreport.HTMLRun{Target: against, Requested: res.Requested, Elapsed: res.Elapsed.Round(time.Millisecond),
			Faults: f.faults, Seed: f.run.seed, Interrupted: res.Interrupted, Notes: res.Notes}
		if err := writeChaosHTML(f.htmlPath, f.run.history, res.Findings, run); err != nil {
			return withCode(exitUsage, err)
		}
	}
	if res.History != "" {
		fmt.Fprintf(stdout, "history: %s (idemcheck analyze %s)\n", res.History, res.History)
	}
	if f.jsonPath != "" {
		if err := createAndWrite(f.jsonPath, func(w io.Writer) error { return chaosreport.JSON(w, res) }); err != nil {
			return withCode(exitUsage, fmt.Errorf("--json: %v", err))
		}
	}
	if res.Interrupted {
		fmt.Fprintf(stdout, "interrupted: %d of %d operations ran, %d cut short and not judged\n", res.Ops, res.Requested, res.Findings.Interrupted)
		return withCode(exitInterrupted, fmt.Errorf("interrupted (%d exactly-once violations in what ran)", len(res.Violations)))
	}
	if res.Ops < res.Requested {
		return withCode(exitFail, fmt.Errorf("only %d of %d operations ran before --deadline", res.Ops, res.Requested))
	}
	return violationsError(res.Findings, f.allowIncomplete)
}

// writeChaosHTML draws the page of a run from its history file.
func writeChaosHTML(path, history string, rep chaos.Findings, run chaosreport.HTMLRun) error {
	in, err := os.Open(history)
	if err != nil {
		return fmt.Errorf("--html: %v", err)
	}
	defer in.Close()
	if err := createAndWrite(path, func(w io.Writer) error { return chaosreport.HTML(w, bufio.NewReader(in), rep, run) }); err != nil {
		return fmt.Errorf("--html: %v", err)
	}
	return nil
}

// createAndWrite creates path and writes it with write; a failed write or
// close is an error, so a full disk is not silent.
func createAndWrite(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

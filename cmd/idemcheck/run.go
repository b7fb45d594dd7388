package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/progress"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

type runFlags struct {
	sel                   scenarios.Selection
	strict                bool
	allowIncomplete       bool
	requireMust           bool
	run, skip             []string
	knownFailing          string
	seed                  uint64
	attempts              int
	junit, json, markdown string
	html                  string
	format                string
	verbose               bool
	// Certification (docs/certify.md).
	attest, badge    string
	subjects         []string
	replayOf, expect string
	// replayConfig is the config the --replay-of report ran with.
	replayConfig *scenarios.Resource
}

func init() {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run (--config FILE | --target URL | --target-cmd CMD)",
		Short: "Run the conformance catalog against an API and report per case",
		Long: "Run every selected case of the conformance catalog against the API described by --config\n" +
			"(or a server following the reference contract at --target) and print a verdict per\n" +
			"case@operation and the conformance level reached (docs/certify.md). Exit codes: 0 pass,\n" +
			"1 a case fails (a MUST-level case that warns included, or a known-failing case passes; with\n" +
			"--expect: a verdict worse than the expected report's), 2 usage or config error (including a\n" +
			"--target-cmd that cannot be started), 4 target unreachable (including a --target-cmd that\n" +
			"started but never answered HTTP within 15s), 5 not enough evidence: nothing failed but a\n" +
			"MUST-level case ended unverifiable or inconclusive (the report says what would decide each,\n" +
			"e.g. an oracle, a longer TTL, a re-run; or accept it with --allow-incomplete), or\n" +
			"with --require-must a MUST was not tested, 130 interrupted (SIGINT/SIGTERM): cases cut\n" +
			"short are not judged, every report says interrupted. A failure beats not enough evidence,\n" +
			"which beats a pass.",
		Example: `  idemcheck run --target http://127.0.0.1:8080 --ttl 3s
  idemcheck run --config examples/reference.yaml --junit idemcheck.xml --json idemcheck.json --html report.html
  idemcheck run --config examples/reference.yaml --run 'replay/**' --skip 'replay/concurrent*' --format json
  idemcheck run --target-cmd 'idemcheck serve --addr 127.0.0.1:{port} --ttl 3s' --ttl 3s --strict --seed 7
  idemcheck run --config api.yaml --require-must --json report.json --attest idemcheck.intoto.json --badge badge.json
  idemcheck run --replay-of report.json --expect report.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConformance(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, givenCommand(cmd))
		},
	}
	bindRunFlags(cmd, &f)
	rootCmd.AddCommand(cmd)
}

// bindRunFlags defines run's flags on cmd; --replay-of parses a report's
// recorded command line with them.
func bindRunFlags(cmd *cobra.Command, f *runFlags) {
	fl := cmd.Flags()
	addConfigFlag(fl, &f.sel.Config, "")
	addTargetFlag(fl, &f.sel.Target)
	addTargetCmdFlag(fl, &f.sel.TargetCmd, "run also kills and restarts it for the lease crash case")
	addReplicaFlag(fl, &f.sel.Replicas)
	addProfileFlag(fl, &f.sel.Profile, "")
	fl.BoolVar(&f.strict, "strict", false, "an unmet SHOULD fails the run instead of warning")
	addAllowIncompleteFlag(fl, &f.allowIncomplete, "a MUST-level case ended unverifiable or inconclusive; no conformance level is claimed")
	fl.BoolVar(&f.requireMust, "require-must", false, "exit 5 when a MUST was not tested (skipped for what the config lacks, or left out by --run/--skip)")
	addSelectFlags(fl, &f.run, &f.skip)
	fl.StringVar(&f.knownFailing, "known-failing", "", "file of globs (one per line, # comments) of cases expected to fail; one that passes fails the run")
	fl.Uint64Var(&f.seed, "seed", 0, "shuffle the start order with this seed (0: catalog order)")
	fl.IntVar(&f.attempts, "attempts", scenarios.DefaultAttempts, "tries of a case whose engineered timing was missed (an overlap, a stall past the TTL or lease), each under fresh keys; 1: never try again")
	addTTLFlag(fl, &f.sel.TTL, "the config", "enables the expiry cases")
	addLeaseFlag(fl, &f.sel.Lease)
	fl.StringVar(&f.junit, "junit", "", "write a JUnit XML report to `FILE`")
	addJSONFlag(fl, &f.json, "schema idemcheck.report/v1")
	fl.StringVar(&f.markdown, "markdown", "", "write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY) to `FILE`")
	addHTMLFlag(fl, &f.html, "every case's verdict with its evidence")
	fl.StringVar(&f.attest, "attest", "", "write an in-toto test-result attestation (Statement v1) of the run to `FILE` (docs/certify.md)")
	fl.StringArrayVar(&f.subjects, "subject", nil, "what the attestation certifies, `NAME=sha256:HEX` (e.g. the API's image digest); repeatable; default: the base URL with the config's digest")
	fl.StringVar(&f.badge, "badge", "", "write a shields.io endpoint badge (JSON) of the conformance level to `FILE`")
	fl.StringVar(&f.replayOf, "replay-of", "", "run again the selection, profile, seed and config of the JSON report `FILE` (refused if the config's digest differs)")
	fl.StringVar(&f.expect, "expect", "", "compare with the JSON report `FILE`: exit 1 only for verdicts worse than it (better ones are listed)")
	addFormatFlag(cmd, &f.format, "stdout format")
	addVerboseFlag(fl, &f.verbose, "also print each result as it finishes (stderr) and the remarks of passing cases in the tree")
	reachFlags(fl, &f.sel)
}

// outputFlags are run's flags that say where results go, not what runs:
// --replay-of takes them from the new command line, never the report's.
var outputFlags = map[string]bool{"junit": true, "json": true, "markdown": true, "html": true, "format": true, "verbose": true,
	"attest": true, "subject": true, "badge": true, "replay-of": true, "expect": true}

// invocation is the command line main was given (run sets it): what a
// report records as the exact command.
var invocation []string

// givenCommand is the command line as given, else (run called another
// way) as commandLine rebuilds it.
func givenCommand(cmd *cobra.Command) []string {
	if len(invocation) > 0 {
		return append([]string{"idemcheck"}, invocation...)
	}
	return commandLine(cmd)
}

// commandLine rebuilds cmd's command line from the flags set, in name
// order, "--name value" (bool: "--name=true") each.
func commandLine(cmd *cobra.Command) []string {
	words := []string{"idemcheck", cmd.Name()}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				words = append(words, "--"+fl.Name, v)
			}
			return
		}
		if fl.Value.Type() == "bool" {
			words = append(words, "--"+fl.Name+"="+fl.Value.String())
			return
		}
		words = append(words, "--"+fl.Name, fl.Value.String())
	})
	return words
}

func runConformance(ctx context.Context, stdout, stderr io.Writer, f runFlags, argv []string) error {
	if f.replayOf != "" {
		var err error
		if f, argv, err = replayFlags(f); err != nil {
			return withCode(exitUsage, err)
		}
	}
	subjects, err := parseSubjects(f.subjects)
	if err != nil {
		return withCode(exitUsage, err)
	}
	var expected *scenarios.Report
	if f.expect != "" {
		if expected, err = readReport("--expect", f.expect); err != nil {
			return withCode(exitUsage, err)
		}
	}
	tgt, profile, err := f.sel.Load()
	if err != nil {
		return withCode(exitUsage, err)
	}
	// A TTL the API declares by a call (AdCP's capabilities) is read
	// before planning: the expiry cases need it.
	if err := wire.DeclaredTTL(context.Background(), tgt); err != nil {
		return withCode(exitUnreachable, err)
	}
	config, err := configResource(f.sel.Config)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if f.attest != "" && len(subjects) == 0 && config == nil {
		return usageErrorf("--attest without --config: give --subject NAME=sha256:HEX (what the attestation certifies)")
	}
	if f.replayOf != "" {
		if err := sameConfig(f, config); err != nil {
			return withCode(exitUsage, err)
		}
	}
	if f.attempts < 1 {
		return usageErrorf("--attempts %d: want 1 or more (1: a missed timing is not tried again)", f.attempts)
	}
	opts := scenarios.RunOptions{Run: f.run, Skip: f.skip, Strict: f.strict, Seed: f.seed, Attempts: f.attempts}
	if f.knownFailing != "" {
		if opts.KnownFailing, err = readGlobFile(f.knownFailing); err != nil {
			return withCode(exitUsage, err)
		}
	}
	// Plan first: bad globs are a usage error before any traffic.
	planned, err := scenarios.Plan(tgt, profile, opts)
	if err != nil {
		return withCode(exitUsage, err)
	}
	warnings := scenarios.GlobWarnings(tgt, opts)
	if len(planned) == 0 {
		return usageErrorf("--run/--skip select no case (try idemcheck list)%s", globHints(warnings))
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "warning: "+w)
	}
	if f.verbose {
		announceRun(stderr, tgt, profile, len(planned))
	}
	// Run-wide notes (an oracle check that failed) go out before the
	// first result.
	opts.OnNote = func(n string) { fmt.Fprintln(stderr, "note: "+n) }
	rules := &scenarios.Report{Strict: f.strict, AllowIncomplete: f.allowIncomplete}
	stopProgress := runProgress(stdout, stderr, f.verbose, rules, tgt, profile, planned, &opts)
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // a second Ctrl-C kills at once
	rep, err := scenarios.Run(ctx, tgt, profile, opts)
	stopProgress()
	if err != nil && ctx.Err() != nil {
		return withCode(exitInterrupted, fmt.Errorf("interrupted before the run started: %v", err))
	}
	if errors.Is(err, apispec.ErrUnreachable) {
		return withCode(exitUnreachable, err)
	}
	if err != nil {
		return withCode(exitUsage, err)
	}
	rep.AllowIncomplete = f.allowIncomplete
	rep.RequireMust = f.requireMust
	rep.Command = recordedCommand(tgt, argv)
	rep.Config = config

	if err := writeRunFiles(f, rep, profile, subjects, expected); err != nil {
		return withCode(exitUsage, err)
	}
	if f.format == "json" {
		err = reports.JSON(stdout, rep)
	} else {
		err = reports.Console(stdout, rep, reports.ConsoleOptions{Color: colorOK(stdout), Verbose: f.verbose})
	}
	if err != nil {
		return err
	}
	return runExit(stderr, rep, f, expected)
}

// announceRun says (--verbose) what is about to run: how many instances,
// against what, under which profile and how executions are counted.
func announceRun(stderr io.Writer, tgt *apispec.Target, profile *apispec.Profile, instances int) {
	where := tgt.Redact(tgt.BaseURL)
	if where == "" {
		where = "the target started by --target-cmd"
	}
	oracle := "no oracle"
	switch {
	case tgt.GlobalOracle():
		oracle = "global counter oracle: one case at a time"
	case len(tgt.Oracles()) > 0:
		oracle = "per-key oracle"
	}
	fmt.Fprintf(stderr, "running %d case instances against %s (profile %s, %s)\n", instances, where, profile.Name, oracle)
}

// writeRunFiles writes every report file asked for (--junit, --json,
// --markdown, --html, --badge) and the attestation (--attest). With
// --expect, the Markdown summary is headed by the comparison the exit
// code follows.
func writeRunFiles(f runFlags, rep *scenarios.Report, profile *apispec.Profile, subjects []reports.Subject, expected *scenarios.Report) error {
	markdown := reports.Markdown
	if expected != nil {
		markdown = reports.MarkdownAgainst(expected, f.expect)
	}
	for _, out := range []struct {
		path  string
		write func(io.Writer, *scenarios.Report) error
	}{{f.junit, reports.JUnit}, {f.json, reports.JSON}, {f.markdown, markdown}, {f.html, reports.HTML}, {f.badge, reports.WriteBadge}} {
		if out.path == "" {
			continue
		}
		if err := writeReport(out.path, rep, out.write); err != nil {
			return err
		}
	}
	if f.attest != "" {
		return writeAttestation(f, rep, profile, subjects)
	}
	return nil
}

// runExit maps the judged run to its exit code: interrupted 130; with
// --expect, 1 only for verdicts worse than expected; else 1 for a failure,
// 5 for a MUST without evidence; then, under --require-must, 5 for a MUST
// not tested (Report.Judge's rule, which --expect does not lift).
func runExit(stderr io.Writer, rep *scenarios.Report, f runFlags, expected *scenarios.Report) error {
	j := rep.Judge()
	if j.Outcome == scenarios.OutcomeInterrupted {
		return withCode(exitInterrupted, fmt.Errorf("interrupted: %d case instances cut short and not judged", reports.Tally(rep).Interrupted))
	}
	if expected != nil {
		worse, better := reports.Compare(expected, rep)
		for _, b := range better {
			fmt.Fprintln(stderr, "better than expected: "+b)
		}
		if len(worse) > 0 {
			return withCode(exitFail, fmt.Errorf("%d verdicts worse than %s: %s", len(worse), f.expect, strings.Join(worse, "; ")))
		}
	} else {
		switch j.Outcome {
		case scenarios.OutcomeFail:
			return withCode(exitFail, fmt.Errorf("%d failing: %s", len(j.Problems), strings.Join(j.Problems, "; ")))
		case scenarios.OutcomeIncomplete:
			if len(j.WithoutEvidence) > 0 {
				return withCode(exitIncomplete, fmt.Errorf("not enough evidence: %d MUST-level case instances unverifiable or inconclusive, listed in the report (--allow-incomplete accepts them)",
					len(j.WithoutEvidence)))
			}
		}
	}
	if len(j.Untested) > 0 {
		return withCode(exitIncomplete, fmt.Errorf("--require-must: %d MUSTs not tested: %s (the summary names the config line for each)", len(j.Untested), strings.Join(j.Untested, "; ")))
	}
	return nil
}

// globHints is the warnings about globs that match nothing, for the
// error of a selection that selects no case: "; " + each, or "".
func globHints(warnings []string) string {
	if len(warnings) == 0 {
		return ""
	}
	return ": " + strings.Join(warnings, "; ")
}

// writeReport writes one report file; its directory must exist.
func writeReport(path string, rep *scenarios.Report, write func(io.Writer, *scenarios.Report) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %v", err)
	}
	if err := write(f, rep); err != nil {
		f.Close()
		return fmt.Errorf("report %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report %s: %v", path, err)
	}
	return nil
}

// readGlobFile reads a known-failing list: one glob per line, blank lines
// and #-comments ignored.
func readGlobFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--known-failing: %v", err)
	}
	defer f.Close()
	var globs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			globs = append(globs, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--known-failing %s: %v", path, err)
	}
	return globs, nil
}

// colorOK: colour only on a terminal, and never when NO_COLOR is set.
func colorOK(w io.Writer) bool {
	return os.Getenv("NO_COLOR") == "" && progress.IsTerminal(w)
}

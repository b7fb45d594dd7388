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

	"github.com/idemcheck/idemcheck/internal/progress"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
)

type runFlags struct {
	sel                   scenarios.Selection
	strict                bool
	allowIncomplete       bool
	run, skip             []string
	knownFailing          string
	seed                  uint64
	junit, json, markdown string
	html                  string
	format                string
	verbose               bool
}

func init() {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run (--config FILE | --target URL | --target-cmd CMD)",
		Short: "Run the conformance catalog against an API and report per case",
		Long: "Run every selected case of the conformance catalog against the API described by --config\n" +
			"(or a server following the reference contract at --target) and print a verdict per\n" +
			"case@operation. Exit codes: 0 pass, 1 a case fails (or a known-failing case passes),\n" +
			"2 usage or config error (including a --target-cmd that cannot be started), 4 target\n" +
			"unreachable (including a --target-cmd that started but never answered HTTP within 15s),\n" +
			"5 not enough evidence: nothing failed but a MUST-level case ended unverifiable or\n" +
			"inconclusive (the report says what would decide each, e.g. an oracle, a longer TTL, a\n" +
			"re-run; or accept it with --allow-incomplete),\n" +
			"130 interrupted (SIGINT/SIGTERM): cases cut short are not judged, every report says\n" +
			"interrupted. A failure beats not enough evidence, which beats a pass.",
		Example: `  idemcheck run --target http://127.0.0.1:8080 --ttl 2s
  idemcheck run --config examples/reference.yaml --junit idemcheck.xml --json idemcheck.json --html report.html
  idemcheck run --config examples/reference.yaml --run 'replay/**' --skip 'replay/concurrent*' --format json
  idemcheck run --target-cmd 'idemcheck serve --addr 127.0.0.1:{port} --ttl 2s' --ttl 2s --strict --seed 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConformance(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.sel.Config, "config", "", "YAML config describing the API under test")
	fl.StringVar(&f.sel.Target, "target", "", "base URL of a server following the reference contract (idemcheck serve)")
	fl.StringVar(&f.sel.TargetCmd, "target-cmd", "", "command line the harness starts (and kills/restarts for the lease crash case) as the target; {port} becomes a free loopback port; alone it implies the reference contract at http://127.0.0.1:{port}")
	fl.StringArrayVar(&f.sel.Replicas, "replica", nil, replicaUsage)
	fl.StringVar(&f.sel.Profile, "profile", "", "profile preset: "+strings.Join(scenarios.ProfileNames(), ", ")+" (replaces the config's profile)")
	fl.BoolVar(&f.strict, "strict", false, "an unmet SHOULD fails the run instead of warning")
	fl.BoolVar(&f.allowIncomplete, "allow-incomplete", false, "pass although a MUST-level case ended unverifiable or inconclusive (instead of exit 5)")
	fl.StringArrayVar(&f.run, "run", nil, "run only cases matching this glob (family/case@operation; * within a segment, a ** segment across, {a,b} alternatives); repeatable")
	fl.StringArrayVar(&f.skip, "skip", nil, "skip cases matching this glob; repeatable")
	fl.StringVar(&f.knownFailing, "known-failing", "", "file of globs (one per line, # comments) of cases expected to fail; one that passes fails the run")
	fl.Uint64Var(&f.seed, "seed", 0, "shuffle the start order with this seed (0: catalog order)")
	fl.DurationVar(&f.sel.TTL, "ttl", 0, "the target's retention (TTL), overriding the config; enables the expiry cases")
	fl.DurationVar(&f.sel.Lease, "lease", 0, "the target's in-flight lease, overriding the config")
	fl.StringVar(&f.junit, "junit", "", "write a JUnit XML report to `FILE`")
	fl.StringVar(&f.json, "json", "", "write the JSON report (schema idemcheck.report/v1) to `FILE`")
	fl.StringVar(&f.markdown, "markdown", "", "write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY) to `FILE`")
	fl.StringVar(&f.html, "html", "", "write the HTML conformance report (one self-contained file) to `FILE`")
	addFormatFlag(cmd, &f.format, "stdout format")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "print each result as it finishes, the reasons of skipped cases, and progress even when stdout is not a terminal")
	reachFlags(fl, &f.sel)
	rootCmd.AddCommand(cmd)
}

func runConformance(ctx context.Context, stdout, stderr io.Writer, f runFlags) error {
	target, profile, err := f.sel.Load()
	if err != nil {
		return withCode(exitUsage, err)
	}
	opts := scenarios.RunOptions{Run: f.run, Skip: f.skip, Strict: f.strict, Seed: f.seed}
	if f.knownFailing != "" {
		if opts.KnownFailing, err = readGlobFile(f.knownFailing); err != nil {
			return withCode(exitUsage, err)
		}
	}
	// Plan first: bad globs are a usage error before any traffic.
	planned, err := scenarios.Plan(target, profile, opts)
	if err != nil {
		return withCode(exitUsage, err)
	}
	warnings := scenarios.GlobWarnings(target, opts)
	if len(planned) == 0 {
		return usageErrorf("--run/--skip select no case (try idemcheck list)%s", globHints(warnings))
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "warning: "+w)
	}
	if f.verbose {
		where := target.Redact(target.BaseURL)
		if where == "" {
			where = "the target started by --target-cmd"
		}
		oracle := "no oracle"
		switch {
		case target.GlobalOracle():
			oracle = "global counter oracle: one case at a time"
		case len(target.Oracles()) > 0:
			oracle = "per-key oracle"
		}
		fmt.Fprintf(stderr, "running %d case instances against %s (profile %s, %s)\n", len(planned), where, profile.Name, oracle)
	}
	// Run-wide notes (an oracle check that failed) go out before the
	// first result.
	opts.OnNote = func(n string) { fmt.Fprintln(stderr, "note: "+n) }
	rules := &scenarios.Report{Strict: f.strict, AllowIncomplete: f.allowIncomplete}
	stopProgress := runProgress(stdout, stderr, f.verbose, rules, target, profile, planned, &opts)
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // a second Ctrl-C kills at once
	rep, err := scenarios.Run(ctx, target, profile, opts)
	stopProgress()
	if err != nil && ctx.Err() != nil {
		return withCode(exitInterrupted, fmt.Errorf("interrupted before the run started: %v", err))
	}
	if errors.Is(err, scenarios.ErrUnreachable) {
		return withCode(exitUnreachable, err)
	}
	if err != nil {
		return withCode(exitUsage, err)
	}
	rep.AllowIncomplete = f.allowIncomplete

	for _, out := range []struct {
		path  string
		write func(io.Writer, *scenarios.Report) error
	}{{f.junit, reports.JUnit}, {f.json, reports.JSON}, {f.markdown, reports.Markdown}, {f.html, reports.HTML}} {
		if out.path == "" {
			continue
		}
		if err := writeReport(out.path, rep, out.write); err != nil {
			return withCode(exitUsage, err)
		}
	}
	if f.format == "json" {
		err = reports.JSON(stdout, rep)
	} else {
		err = reports.Console(stdout, rep, reports.ConsoleOptions{Color: colorOK(stdout), Verbose: f.verbose})
	}
	if err != nil {
		return err
	}
	switch j := rep.Judge(); j.Outcome {
	case scenarios.OutcomeInterrupted:
		return withCode(exitInterrupted, fmt.Errorf("interrupted: %d case instances cut short and not judged", reports.Tally(rep).Interrupted))
	case scenarios.OutcomeFail:
		return withCode(exitFail, fmt.Errorf("%d failing: %s", len(j.Problems), strings.Join(j.Problems, "; ")))
	case scenarios.OutcomeIncomplete:
		return withCode(exitIncomplete, fmt.Errorf("not enough evidence: %d MUST-level case instances unverifiable or inconclusive, listed in the report (--allow-incomplete accepts them)",
			len(j.WithoutEvidence)))
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

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// listPlaceholder stands in for --target when list runs with no target:
// listing sends no traffic, it only needs the reference contract's shape.
const listPlaceholder = "http://127.0.0.1:8080"

type listFlags struct {
	sel       scenarios.Selection
	run, skip []string
	format    string
}

func init() {
	var f listFlags
	cmd := &cobra.Command{
		Use:   "list [--config FILE | --target URL]",
		Short: "List the case instances a run would execute, and what each needs (no traffic)",
		Long: "List the selected case instances (case@operation) with their level, requirement IDs and\n" +
			"spec sentence, whether the config supplies what each case needs, and how each counts\n" +
			"executions (ORACLE: per-key, global-serial (a global counter read around each key's\n" +
			"requests; the run is serial), identity (distinct created ids), none), and the instances\n" +
			"the profile or the declared TTL will skip (\"skips: ...\"; not counted as runnable). It\n" +
			"ends with the MUST requirements the config cannot verify, each with its fix. A --run or\n" +
			"--skip glob that matches nothing is a warning naming close matches. Sends no request;\n" +
			"with neither --config nor --target it lists against the reference contract.",
		Example: `  idemcheck list
  idemcheck list --target http://127.0.0.1:8080 --profile stripe
  idemcheck list --config examples/reference.yaml --run 'mismatch/**' --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runList(cmd.OutOrStdout(), cmd.ErrOrStderr(), f) },
	}
	fl := cmd.Flags()
	addConfigFlag(fl, &f.sel.Config, "")
	addTargetFlag(fl, &f.sel.Target)
	addReplicaFlag(fl, &f.sel.Replicas)
	addTargetCmdFlag(fl, &f.sel.TargetCmd, "list does not start it")
	addProfileFlag(fl, &f.sel.Profile, "")
	addTTLFlag(fl, &f.sel.TTL, "the config", "decides which expiry cases are listed as runnable")
	addLeaseFlag(fl, &f.sel.Lease)
	reachFlags(fl, &f.sel)
	addSelectFlags(fl, &f.run, &f.skip)
	addFormatFlag(cmd, &f.format, "output")
	rootCmd.AddCommand(cmd)
}

func runList(w, stderr io.Writer, f listFlags) error {
	sel := f.sel
	if sel.Config == "" && sel.Target == "" && sel.TargetCmd == "" {
		sel.Target = listPlaceholder
	}
	tg, profile, err := sel.Load()
	if err != nil {
		return withCode(exitUsage, err)
	}
	opts := scenarios.RunOptions{Run: f.run, Skip: f.skip}
	planned, err := scenarios.Plan(tg, profile, opts)
	if err != nil {
		return withCode(exitUsage, err)
	}
	for _, w := range scenarios.GlobWarnings(tg, opts) {
		fmt.Fprintln(stderr, "warning: "+w)
	}
	if f.format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(planned)
	}
	width := len("CASE")
	for _, p := range planned {
		width = max(width, len(p.Name()))
	}
	fmt.Fprintf(w, "%-*s  %-6s  %-28s  %-13s  %s\n", width, "CASE", "LEVEL", "REQUIREMENTS", "ORACLE", "CONFIG")
	runnable := 0
	for _, p := range planned {
		status := "supplied"
		switch {
		case p.Runnable():
			runnable++
		case p.Supplied:
			status = "skips: " + p.Skip
		default:
			missing := make([]string, len(p.Missing))
			for i, n := range p.Missing {
				missing[i] = string(n)
			}
			status = "lacks " + strings.Join(missing, ", ")
		}
		fmt.Fprintf(w, "%-*s  %-6s  %-28s  %-13s  %s\n", width, p.Name(), p.Level, strings.Join(p.Requirements, ","), p.OracleMode, status)
		fmt.Fprintf(w, "    %s\n", p.Requirement)
	}
	fmt.Fprintf(w, "\n%d case instances, %d runnable with this config, profile %s", len(planned), runnable, profile.Name)
	if tg.TTL > 0 {
		fmt.Fprintf(w, " and ttl %s", tg.TTL)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, scenarios.EvidenceLine(tg))
	if n := apispec.StatusNote(tg, profile); n != "" {
		fmt.Fprintln(w, n)
	}
	for _, n := range apispec.DerivedNote(tg) {
		fmt.Fprintln(w, n)
	}
	if n := apispec.RequestMutationNote(tg); n != "" {
		fmt.Fprintln(w, n)
	}
	gaps, notAsked := scenarios.Gaps(planned, scenarios.CarrierName(tg))
	if len(gaps) == 0 {
		fmt.Fprintln(w, "Every MUST requirement listed that applies to this API is verifiable with this config.")
	} else {
		fmt.Fprintf(w, "\nMUST requirements this config cannot verify (%d):\n", len(gaps))
		for _, g := range gaps {
			fmt.Fprintf(w, "  %s (%s): %s\n", g.Case, strings.Join(g.Requirements, ","), g.Fix)
		}
	}
	if len(notAsked) > 0 {
		// An API with no outbox or no replicas has no such rule to keep:
		// these are what a config that asks for them would add.
		fmt.Fprintf(w, "\nOpt-in families not asked for (%d MUST instances: events, replicas):\n", len(notAsked))
		for _, g := range notAsked {
			fmt.Fprintf(w, "  %s (%s): %s\n", g.Case, strings.Join(g.Requirements, ","), g.Fix)
		}
	}
	return nil
}

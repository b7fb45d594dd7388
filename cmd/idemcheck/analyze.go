package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/reports/chaosreport"
)

func init() {
	var (
		jsonPath        string
		htmlPath        string
		skipTorn        bool
		allowIncomplete bool
		ttl, margin     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "analyze HISTORY.jsonl",
		Short: "Re-run the exactly-once checker over a recorded chaos history",
		Long: "Read a history written by idemcheck proxy --history or idemcheck chaos --history and apply\n" +
			"the exactly-once rules per key again, offline. The target's TTL comes from the history\n" +
			"(chaos writes it) or --ttl: an execution from an attempt sent past TTL − margin may be legal.\n" +
			"Exit codes: 0 clean, 1 violations, 2 unreadable, empty or torn history, 5 not enough evidence\n" +
			"(operations recorded, none shows an execution, or more keys not judged than judged;\n" +
			"--allow-incomplete accepts it).",
		Example: `  idemcheck analyze chaos.jsonl
  idemcheck analyze attempts.jsonl --ttl 24h --json report.json
  idemcheck analyze chaos.jsonl --json -
  idemcheck analyze chaos.jsonl --html chaos.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return withCode(exitUsage, err)
			}
			defer f.Close()
			c := chaos.NewChecker()
			c.TTL, c.Margin = ttl, margin
			torn, err := chaos.ReadHistory(f, c, skipTorn)
			if c.Margin == 0 && !cmd.Flags().Changed("margin") {
				// A proxy's history carries no margin: the default profile's.
				p, _ := apispec.ProfileByName("")
				c.Margin = p.Margin
			}
			if torn != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "idemcheck: warning: %s: skipped %s\n", args[0], torn)
			}
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("%s: %v", args[0], err))
			}
			rep := c.Report()
			out := cmd.OutOrStdout()
			if jsonPath != "-" {
				chaosreport.Console(out, rep)
			}
			if jsonPath != "" {
				if err := writeAnalyzeJSON(jsonPath, out, rep); err != nil {
					return withCode(exitUsage, fmt.Errorf("--json: %v", err))
				}
			}
			if htmlPath != "" {
				if err := writeChaosHTML(htmlPath, args[0], rep, chaosreport.HTMLRun{Target: args[0]}); err != nil {
					return withCode(exitUsage, err)
				}
			}
			return violationsError(rep, allowIncomplete)
		},
	}
	fl := cmd.Flags()
	addJSONFlag(fl, &jsonPath, "-: to stdout, instead of the summary")
	addHTMLFlag(fl, &htmlPath, htmlChaos)
	fl.BoolVar(&skipTorn, "skip-torn-tail", false, "skip a last line that does not parse (a run killed mid-write), with a warning")
	addTTLFlag(fl, &ttl, "the history's", "executions after it are legal")
	addMarginFlag(fl, &margin, 0, "default: the history's, else the ietf profile's 500ms")
	addAllowIncompleteFlag(fl, &allowIncomplete, incompleteChaos)
	rootCmd.AddCommand(cmd)
}

// writeAnalyzeJSON writes the report as indented JSON to path, or to
// stdout when path is "-".
func writeAnalyzeJSON(path string, stdout io.Writer, rep chaos.Findings) error {
	if path == "-" {
		return chaosreport.JSON(stdout, rep)
	}
	return createAndWrite(path, func(w io.Writer) error { return chaosreport.JSON(w, rep) })
}

// A run that exercised nothing, or judged fewer keys than it left
// unjudged, exits 5 like a conformance run without evidence, unless
// allowIncomplete (--allow-incomplete).
func violationsError(r chaos.Findings, allowIncomplete bool) error {
	switch {
	case len(r.Violations) > 0:
		return withCode(exitFail, fmt.Errorf("%d exactly-once violations", len(r.Violations)))
	case !r.Exercised && !allowIncomplete:
		return withCode(exitIncomplete, fmt.Errorf("no operation shows an execution: exactly-once was not exercised (--allow-incomplete accepts this)"))
	case r.MostlyUnjudged() && !allowIncomplete:
		return withCode(exitIncomplete, fmt.Errorf("%d of %d keys not judged (%s): not enough evidence (--allow-incomplete accepts this)", r.Keys-r.Judged, r.Keys, chaosreport.Reasons(r.NotJudged)))
	}
	return nil
}

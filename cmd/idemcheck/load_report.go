package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/load"
)

// newLoadReportCmd merges results files of a distributed run.
func newLoadReportCmd() *cobra.Command {
	var (
		out         loadOutputs
		judge       loadJudging
		ttl, margin time.Duration
	)
	cmd := &cobra.Command{
		Use:   "report FILE...",
		Short: "Merge vegeta results files written by 'idemcheck load --results' into one report",
		Long: "Merge results files (one per machine) and report per path, re-checking that every\n" +
			"replay equals its key's original response. Oracle counts are not in the files.",
		Example: `  idemcheck load --target http://127.0.0.1:8080 --results run-a.bin
  idemcheck load report run-a.bin run-b.bin --json merged.json --html merged.html --threshold 'hit.p99<5ms'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			ths, err := parseThresholds(judge.thresholds, "")
			if err != nil {
				return err
			}
			if err := judge.check(); err != nil {
				return err
			}
			rep, err := load.ReadResults(files, judge.verySlow, ttl, margin, out.html != "")
			if err != nil {
				return usageErrorf("load report: %v", err)
			}
			return finishLoad(cmd.OutOrStdout(), rep, ths, out, judge)
		},
	}
	fl := cmd.Flags()
	out.register(cmd)
	judge.register(fl)
	addTTLFlag(fl, &ttl, "", "a replay after it may legally execute anew")
	ietf, _ := apispec.ProfileByName("")
	addMarginFlag(fl, &margin, ietf.Margin, "")
	return cmd
}

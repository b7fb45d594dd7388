package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/target"
)

// newLoadReportCmd merges results files of a distributed run.
func newLoadReportCmd() *cobra.Command {
	var (
		out        loadOutputs
		verySlow   time.Duration
		ttl        time.Duration
		margin     time.Duration
		maxErrors  float64
		thresholds []string
		allow      bool
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
			ths, err := parseThresholds(thresholds, "")
			if err != nil {
				return err
			}
			if maxErrors < 0 || maxErrors > 1 {
				return usageErrorf("--max-error-share %v: want 0..1", maxErrors)
			}
			rep, err := load.ReadResults(files, verySlow, ttl, margin, out.html != "")
			if err != nil {
				return usageErrorf("load report: %v", err)
			}
			return finishLoad(cmd.OutOrStdout(), rep, ths, out, maxErrors, allow)
		},
	}
	out.register(cmd)
	cmd.Flags().DurationVar(&verySlow, "very-slow", time.Second, "latency counted as very slow")
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "the target's key lifetime: a replay after it may legally execute anew")
	ietf, _ := target.ProfileByName("")
	cmd.Flags().DurationVar(&margin, "margin", ietf.Margin, "the profile's margin before the TTL: answers to requests sent later than TTL − margin after their key's first are not judged")
	cmd.Flags().BoolVar(&allow, "allow-incomplete", false, "exit 0 although most answers were not judged, instead of exit 5")
	cmd.Flags().Float64Var(&maxErrors, "max-error-share", load.DefaultMaxErrorShare, "share (0..1) of transport errors and 5xx a path may have before the run fails")
	cmd.Flags().StringArrayVar(&thresholds, "threshold", nil, "k6-style pass condition, repeatable")
	return cmd
}

package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/load"
)

// newLoadReportCmd merges results files of a distributed run.
func newLoadReportCmd() *cobra.Command {
	var (
		out        loadOutputs
		verySlow   time.Duration
		thresholds []string
	)
	cmd := &cobra.Command{
		Use:   "report FILE...",
		Short: "Merge vegeta results files written by 'idemcheck load --results' into one report",
		Long: "Merge results files (one per machine) and report per path, re-checking that every\n" +
			"replay equals its key's original response. Oracle counts are not in the files.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			ths, err := parseThresholds(thresholds, "")
			if err != nil {
				return err
			}
			rep, err := load.ReadResults(files, verySlow, out.html != "")
			if err != nil {
				return usageErrorf("load report: %v", err)
			}
			return finishLoad(cmd.OutOrStdout(), rep, ths, out)
		},
	}
	out.register(cmd)
	cmd.Flags().DurationVar(&verySlow, "very-slow", time.Second, "latency counted as very slow")
	cmd.Flags().StringArrayVar(&thresholds, "threshold", nil, "k6-style pass condition, repeatable")
	return cmd
}

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reports"
)

func init() {
	var reportPath, configPath string
	cmd := &cobra.Command{
		Use:   "verify ATTESTATION [--report report.json] [--config FILE]",
		Short: "Check a conformance or client attestation against its report and config",
		Long: "Check an in-toto test-result attestation written by run --attest or client --attest: its\n" +
			"shape, the tool version it names, that its level follows from its results by the run's rule\n" +
			"(the client catalog's for a client certification), and, when given, that --report (the JSON\n" +
			"report) and --config (as run, or as redacted) are the ones it cites by digest and that the\n" +
			"report's verdicts give its result, lists and level. Prints one line per mismatch; a tool\n" +
			"revision that is not a git commit is one, a missing revision (a build without VCS stamping) a\n" +
			"note; when consistent, what it claims (a conformance run or a client certification, and its\n" +
			"level). Exit codes: 0 consistent, 1 a mismatch, 2 usage error or an unreadable attestation (a\n" +
			"JSON report given in its place says to pass it as --report). Signatures are checked by the\n" +
			"signer's tool (docs/certify.md).",
		Example: `  idemcheck verify idemcheck.intoto.json --report report.json --config idemcheck.yaml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := reports.VerifyInput{Tool: toolInfo(), ClientCatalog: clientCatalog()}
			var err error
			if in.Attestation, err = os.ReadFile(args[0]); err != nil {
				return withCode(exitUsage, fmt.Errorf("attestation: %v", err))
			}
			if reportPath != "" {
				if in.Report, err = os.ReadFile(reportPath); err != nil {
					return withCode(exitUsage, fmt.Errorf("--report: %v", err))
				}
			}
			if configPath != "" {
				cf, err := apispec.ReadFile(configPath)
				if err != nil {
					return withCode(exitUsage, err)
				}
				in.Config = cf.Raw
			}
			bad, err := reports.Verify(in)
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("%s: %v", args[0], err))
			}
			out := cmd.OutOrStdout()
			// No revision is no mismatch (a release image has none), but
			// it is said: the version alone then names the build.
			a, err := reports.ReadAttestation(in.Attestation)
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("%s: %v", args[0], err))
			}
			if a.ToolRevision() == "" {
				fmt.Fprintln(out, "note: the attestation names no tool revision (a build without VCS stamping): only its version identifies the build")
			}
			for _, b := range bad {
				fmt.Fprintln(out, "mismatch: "+b)
			}
			if len(bad) > 0 {
				return withCode(exitFail, fmt.Errorf("%s: %d mismatches", args[0], len(bad)))
			}
			fmt.Fprintf(out, "%s: consistent: %s\n", args[0], a.Claim())
			return nil
		},
	}
	cmd.Flags().StringVar(&reportPath, "report", "", "the JSON report the attestation cites")
	addConfigFlag(cmd.Flags(), &configPath, "the one the run read, or its redacted copy")
	rootCmd.AddCommand(cmd)
}

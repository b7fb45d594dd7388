package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/clientcheck"
	"github.com/idemcheck/idemcheck/reference/client"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
)

type clientFlags struct {
	config, profile string
	run             []string
	strict          bool
	allowIncomplete bool
	list, verbose   bool
	hold, bound     time.Duration
	json, junit     string
	markdown, html  string
	badge           string
	attest          string
	subjects        []string
}

func init() {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "client [flags] -- COMMAND [ARGS...]",
		Short: "Certify an API client or SDK: a stand-in API injects faults per case and judges every attempt",
		Long: "Run COMMAND once per case run against a stand-in API that plays a correct server (by default the\n" +
			"reference's POST /v1/charges; --config for another) and injects the case's fault: a lost answer, an\n" +
			"answer slower than the client's timeout, 409/429 with Retry-After, 5xx, 400/422, a persistent 503.\n" +
			"COMMAND gets IDEMCHECK_BASE_URL, IDEMCHECK_CALLS, IDEMCHECK_PARALLEL, IDEMCHECK_TOKEN and\n" +
			"IDEMCHECK_CASE; it makes the calls through its SDK, prints one created id per successful call and\n" +
			"exits 0 when every call succeeded (docs/clients.md). A COMMAND that cannot start exits 2; one that\n" +
			"never calls the stand-in or hangs past --case-timeout exits 4. COMMAND runs in its own process\n" +
			"group, killed when it exits or is stopped. The stand-in listens on 127.0.0.1 only.",
		Example: `  idemcheck client -- idemcheck refclient
  idemcheck client --strict --junit client.xml -- node harness.js
  idemcheck client --run 'retry/*' -- idemcheck refclient --defect fresh-key-per-retry`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.list {
				return listClientCases(cmd.OutOrStdout())
			}
			if len(args) == 0 {
				return usageErrorf("client: give the client command after --, e.g. idemcheck client -- idemcheck refclient")
			}
			return runClient(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, args)
		},
	}
	fl := cmd.Flags()
	fl.SetInterspersed(false) // what follows COMMAND is its own
	addConfigFlag(fl, &f.config, "the operations the stand-in serves, key_header and the profile")
	addProfileFlag(fl, &f.profile, "how the stand-in honours keys and the key syntax judged")
	fl.StringArrayVar(&f.run, "run", nil, "run only the cases whose ID matches this glob (e.g. 'retry/*'); repeatable")
	fl.BoolVar(&f.strict, "strict", false, "an unmet SHOULD fails the run instead of warning")
	addAllowIncompleteFlag(fl, &f.allowIncomplete, "a MUST-level case ended inconclusive (e.g. a client timeout longer than --hold)")
	fl.BoolVar(&f.list, "list", false, "list the client cases and exit")
	addVerboseFlag(fl, &f.verbose, "each case run as it starts")
	fl.DurationVar(&f.hold, "hold", clientcheck.DefaultHold, "how long the timeout case holds its answer: a client whose timeout is longer makes the case inconclusive")
	fl.DurationVar(&f.bound, "case-timeout", clientcheck.DefaultBound, "the most one case run of COMMAND may take (past it: exit 4)")
	addJSONFlag(fl, &f.json, "")
	fl.StringVar(&f.junit, "junit", "", "write a JUnit XML report to `FILE`")
	fl.StringVar(&f.markdown, "markdown", "", "write a Markdown summary to `FILE`")
	addHTMLFlag(fl, &f.html, "every case with its attempts")
	fl.StringVar(&f.badge, "badge", "", "write a shields.io endpoint badge (JSON) of the client's conformance level to `FILE`")
	fl.StringVar(&f.attest, "attest", "", "write an in-toto test-result attestation of the client's run to `FILE` (docs/certify.md; needs --subject)")
	fl.StringArrayVar(&f.subjects, "subject", nil, "what the attestation certifies, `NAME=sha256:HEX` (the client or SDK build); repeatable")
	rootCmd.AddCommand(cmd)

	var rf struct {
		defects []string
		timeout time.Duration
	}
	ref := &cobra.Command{
		Use:   "refclient",
		Short: "The reference client under the client driving contract (a subject for idemcheck client)",
		Long: "Make IDEMCHECK_CALLS calls (in IDEMCHECK_PARALLEL workers) of POST /v1/charges at IDEMCHECK_BASE_URL\n" +
			"with the reference's client, printing each created id. Defects: " + strings.Join(client.Defects(), ", "),
		Example: `  idemcheck client -- idemcheck refclient --defect ignored-retry-after`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := client.Options{Timeout: rf.timeout}
			for _, arg := range rf.defects {
				for _, d := range strings.Split(arg, ",") {
					if d = strings.TrimSpace(d); d == "" {
						continue
					}
					if _, ok := client.DefectDoc(d); !ok {
						return usageErrorf("--defect %q: unknown client defect (known: %s)", d, strings.Join(client.Defects(), ", "))
					}
					o.Defects = append(o.Defects, client.Defect(d))
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			switch code := client.Main(ctx, os.Getenv, cmd.OutOrStdout(), cmd.ErrOrStderr(), o); code {
			case 0:
				return nil
			case exitUsage:
				return withCode(code, errors.New("refclient: run it under idemcheck client (the driving contract's variables, docs/clients.md)"))
			default:
				return withCode(code, errors.New("refclient: not every call succeeded"))
			}
		},
	}
	ref.Flags().StringArrayVar(&rf.defects, "defect", nil, "switch on a client defect; repeatable")
	ref.Flags().DurationVar(&rf.timeout, "timeout", client.DefaultTimeout, "per-attempt timeout")
	rootCmd.AddCommand(ref)
}

func listClientCases(w io.Writer) error {
	for _, c := range clientcheck.Catalog() {
		if _, err := fmt.Fprintf(w, "%-24s %-6s %-12s %s\n", c.ID, c.Level, c.Requirements[0], c.Explanation); err != nil {
			return err
		}
	}
	return nil
}

func runClient(ctx context.Context, stdout, stderr io.Writer, f clientFlags, args []string) error {
	switch {
	case f.hold <= 0:
		return usageErrorf("--hold %s: must be positive (how long the timeout case holds its answer)", f.hold)
	case f.bound <= 0:
		return usageErrorf("--case-timeout %s: must be positive (the most one case run of COMMAND may take)", f.bound)
	case f.hold >= f.bound:
		return usageErrorf("--hold %s: must be shorter than --case-timeout %s, so that a client waiting out the hold can still finish its case run", f.hold, f.bound)
	}
	var tgt *apispec.Target
	var profile *apispec.Profile
	var err error
	switch {
	case f.config != "":
		tgt, profile, err = apispec.LoadConfigPreset(f.config, f.profile)
	case f.profile != "":
		profile, err = apispec.ProfileByName(f.profile)
	}
	if err != nil {
		return withCode(exitUsage, err)
	}
	subjects, err := parseSubjects(f.subjects)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if f.attest != "" && len(subjects) == 0 {
		return usageErrorf("--attest: give --subject NAME=sha256:HEX (the client build the attestation certifies)")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := clientcheck.Options{
		Target: tgt, Profile: profile, Driver: clientcheck.Command{Args: args},
		Subject: strings.Join(args, " "), Run: f.run, Strict: f.strict, AllowIncomplete: f.allowIncomplete,
		Hold: f.hold, Bound: f.bound,
	}
	if f.verbose {
		o.Progress = func(run, caseID string) { fmt.Fprintf(stderr, "run %s (case %s)\n", run, caseID) }
	}
	rep, err := clientcheck.Check(ctx, o)
	if err != nil {
		if ctx.Err() != nil {
			return withCode(exitInterrupted, errors.New("interrupted"))
		}
		var se *clientcheck.SetupError
		if errors.As(err, &se) {
			return withCode(se.Code, err)
		}
		return withCode(exitUsage, err)
	}
	if tgt == nil {
		tgt = &apispec.Target{}
	}
	rep.Command = recordedCommand(tgt, append([]string{"idemcheck"}, invocation...))
	for _, out := range []struct {
		path  string
		write func(io.Writer, *scenarios.Report) error
	}{{f.junit, reports.JUnit}, {f.json, reports.JSON}, {f.markdown, reports.Markdown}, {f.html, reports.HTML}, {f.badge, reports.WriteBadge}} {
		if out.path == "" {
			continue
		}
		if err := writeReport(out.path, rep, out.write); err != nil {
			return withCode(exitUsage, err)
		}
	}
	if f.attest != "" {
		o := reports.AttestOptions{Tool: toolInfo(), Subjects: subjects, Profile: profile, ClientCatalog: clientCatalog()}
		if f.json != "" {
			raw, err := os.ReadFile(f.json)
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("--attest: %v", err))
			}
			o.Report = &scenarios.Resource{Path: f.json, SHA256: reports.SHA256(raw)}
		}
		if err := writeReport(f.attest, rep, func(w io.Writer, rep *scenarios.Report) error { return reports.Attest(w, rep, o) }); err != nil {
			return withCode(exitUsage, err)
		}
	}
	if err := reports.Console(stdout, rep, reports.ConsoleOptions{Color: colorOK(stdout), Verbose: f.verbose}); err != nil {
		return err
	}
	return runExit(stderr, rep, runFlags{}, nil)
}

// clientCatalog is the client catalog's metadata, what attestations of
// client runs cite and verify checks them by.
func clientCatalog() []scenarios.Meta {
	var metas []scenarios.Meta
	for _, c := range clientcheck.Catalog() {
		metas = append(metas, c.Meta)
	}
	return metas
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
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
				printChaosReport(out, rep)
			}
			if jsonPath != "" {
				if err := writeAnalyzeJSON(jsonPath, out, rep); err != nil {
					return withCode(exitUsage, fmt.Errorf("--json: %v", err))
				}
			}
			if htmlPath != "" {
				if err := writeChaosHTML(htmlPath, args[0], rep, chaos.HTMLRun{Target: args[0]}); err != nil {
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
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// printChaosReport writes the human summary: counts, faults, violations
// with evidence (at most 20, then a count), and how many keys were judged.
func printChaosReport(w io.Writer, r chaos.Findings) {
	fmt.Fprintf(w, "keys %d, operations %d, attempts %d, unresolved %d, interrupted %d\n", r.Keys, r.Ops, r.Attempts, r.Unresolved, r.Interrupted)
	fmt.Fprintf(w, "faults injected: %s\n", counts(r.Faults))
	if r.Ops > 0 {
		fmt.Fprintf(w, "client outcomes: %s\n", outcomeList(r.Outcomes, r.FailsByKind, r.Protocol == "gRPC"))
	}
	// Executions after the TTL and evidence with another explanation are
	// information, not findings: their lines never name a rule as if it
	// were broken.
	if r.TTL > 0 {
		fmt.Fprintf(w, "key TTL %s − margin %s: %d keys ran again from an attempt sent after it; their record may have expired, so each is a legal fresh execution, not a violation\n", r.TTL, r.Margin, len(r.AfterTTL))
		printViolations(w, r.AfterTTL, 5, func(chaos.KeyViolation) string { return "fresh execution after the TTL" })
	}
	if len(r.Unjudged) > 0 {
		fmt.Fprintf(w, "not judged: %d keys whose evidence against the server has another explanation (answers the harness dropped, 5xx of two sources)\n", len(r.Unjudged))
		printViolations(w, r.Unjudged, 5, func(v chaos.KeyViolation) string { return "not judged (" + v.Reason + ")" })
	}
	judged := fmt.Sprintf("in %d of %d keys judged", r.Judged, r.Keys)
	if len(r.NotJudged) > 0 {
		judged += fmt.Sprintf("; %d not judged: %s", r.Keys-r.Judged, reasonList(r.NotJudged))
	}
	switch {
	case len(r.Violations) > 0:
		byRule := map[string]int{}
		for _, v := range r.Violations {
			byRule[v.Rule]++
		}
		fmt.Fprintf(w, "exactly-once: %d VIOLATIONS (%s) %s\n", len(r.Violations), counts(byRule), judged)
		printViolations(w, r.Violations, 20, func(v chaos.KeyViolation) string { return v.Rule })
	case !r.Exercised:
		fmt.Fprintf(w, "exactly-once: NOT EXERCISED: none of %d operations shows an execution (no 2xx, created id or oracle count), so nothing committed could run twice (check the operation's body, path and credentials)\n", r.Ops)
	case r.MostlyUnjudged():
		fmt.Fprintf(w, "exactly-once: NOT ENOUGH EVIDENCE: 0 violations %s\n", judged)
	default:
		fmt.Fprintf(w, "exactly-once: OK: 0 violations %s\n", judged)
	}
}

// outcomeMeaning says what each client outcome of an operation means.
var outcomeMeaning = map[string]string{
	chaos.ClientOK:          "a 2xx answer",
	chaos.ClientFail:        "a final non-2xx answer",
	chaos.ClientUnknown:     "no final answer: the last attempt was dropped, cut, or answered 409 or 5xx",
	chaos.ClientInterrupted: "cut short by the run's end",
}

// grpcOutcomeMeaning is outcomeMeaning over gRPC, in codes (ABORTED and
// ALREADY_EXISTS are the codes of 409).
var grpcOutcomeMeaning = map[string]string{
	chaos.ClientOK:          "an OK answer",
	chaos.ClientFail:        "a final answer other than OK",
	chaos.ClientUnknown:     "no final answer: the last attempt was dropped, cut, or answered ABORTED, ALREADY_EXISTS or a status the proxy made up",
	chaos.ClientInterrupted: "cut short by the run's end",
}

// failMeaning says which op kinds' failures are expected answers.
var failMeaning = map[string]string{
	chaos.KindBusiness:  "the business error variant's expected answer, e.g. 402",
	chaos.KindTransient: "the transient error variant's expected answer, e.g. 503",
	chaos.KindMutated:   "a changed body rejected, e.g. 422",
}

// grpcFailMeaning is failMeaning over gRPC.
var grpcFailMeaning = map[string]string{
	chaos.KindBusiness:  "the business error variant's expected answer, e.g. FAILED_PRECONDITION",
	chaos.KindTransient: "the transient error variant's expected answer, e.g. UNAVAILABLE",
	chaos.KindMutated:   "a changed message rejected, e.g. INVALID_ARGUMENT",
}

// outcomeList is "fail 151 (a final non-2xx answer: business 80, the
// business error variant's ...), ok 840 (a 2xx answer)".
func outcomeList(m, failsByKind map[string]int, grpc bool) string {
	outcomes, fails := outcomeMeaning, failMeaning
	if grpc {
		outcomes, fails = grpcOutcomeMeaning, grpcFailMeaning
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		part := fmt.Sprintf("%s %d", k, m[k])
		what := outcomes[k]
		if k == chaos.ClientFail && len(failsByKind) > 0 {
			var kinds []string
			expected := true
			for _, kind := range slices.Sorted(maps.Keys(failsByKind)) {
				why := fails[kind]
				if why == "" {
					why, expected = "not an expected answer", false
				}
				kinds = append(kinds, fmt.Sprintf("%s %d, %s", kind, failsByKind[kind], why))
			}
			if expected {
				// Not an alarm: each is the answer its operation was built to get.
				what = "final non-2xx answers, all expected"
			}
			what += ": " + strings.Join(kinds, "; ")
		}
		if what != "" {
			part += " (" + what + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// reasonList is "the harness dropped every answer 11, ..." (most first).
func reasonList(m map[string]int) string {
	reasons := slices.Sorted(maps.Keys(m))
	sort.SliceStable(reasons, func(i, j int) bool { return m[reasons[i]] > m[reasons[j]] })
	parts := make([]string, len(reasons))
	for i, k := range reasons {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// printViolations writes the first limit of vs, each after its label,
// then how many more there are.
func printViolations(w io.Writer, vs []chaos.KeyViolation, limit int, label func(chaos.KeyViolation) string) {
	for i, v := range vs {
		if i == limit {
			fmt.Fprintf(w, "  ... and %d more (see --json)\n", len(vs)-i)
			return
		}
		printViolation(w, label(v), v)
	}
}

// printViolation writes one key's evidence on one line after its label:
// a violation's rule, or what makes it legal or not judged.
func printViolation(w io.Writer, label string, v chaos.KeyViolation) {
	oracle := "-"
	if v.Oracle != nil {
		oracle = fmt.Sprint(*v.Oracle)
	}
	detail := strings.TrimPrefix(v.Detail, "not judged: ")
	answers := "upstream statuses=" + list(v.Statuses)
	if len(v.Codes) > 0 {
		answers = "upstream codes=" + list(v.Codes) // a gRPC key's: the codes, not the statuses they map to
	}
	fmt.Fprintf(w, "  %s key=%s kind=%s: %s; ids=%s %s oracle=%s\n", label, v.Key, v.Kind, detail, list(v.IDs), answers, oracle)
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
		return withCode(exitIncomplete, fmt.Errorf("%d of %d keys not judged (%s): not enough evidence (--allow-incomplete accepts this)", r.Keys-r.Judged, r.Keys, reasonList(r.NotJudged)))
	}
	return nil
}

package chaosreport

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/reports/internal/words"
)

// Console writes the human summary: counts, faults, violations
// with evidence (at most 20, then a count), and how many keys were judged.
func Console(w io.Writer, r chaos.Findings) {
	fmt.Fprintf(w, "keys %d, operations %d, attempts %d, unresolved %d, interrupted %d\n", r.Keys, r.Ops, r.Attempts, r.Unresolved, r.Interrupted)
	fmt.Fprintf(w, "faults injected: %s\n", words.Counts(r.Faults))
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
	judged := keysJudged(r)
	if len(r.NotJudged) > 0 {
		judged += fmt.Sprintf("; %d not judged: %s", r.Keys-r.Judged, Reasons(r.NotJudged))
	}
	switch {
	case len(r.Violations) > 0:
		byRule := map[string]int{}
		for _, v := range r.Violations {
			byRule[v.Rule]++
		}
		fmt.Fprintf(w, "exactly-once: %d VIOLATIONS (%s) %s\n", len(r.Violations), words.Counts(byRule), judged)
		printViolations(w, r.Violations, 20, func(v chaos.KeyViolation) string { return v.Rule })
	case !r.Exercised:
		fmt.Fprintf(w, "exactly-once: NOT EXERCISED: none of %d operations shows an execution (no 2xx, created id or oracle count), so nothing committed could run twice (check the operation's body, path and credentials)\n", r.Ops)
	case r.MostlyUnjudged():
		fmt.Fprintf(w, "exactly-once: %s: 0 violations %s\n", strings.ToUpper(words.NotEnoughEvidence), judged)
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

// Reasons is "the harness dropped every answer 11, ..." (most first).
func Reasons(m map[string]int) string {
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

// list prints values comma-separated instead of Go's [a b]; empty is "-".
func list[T any](vs []T) string {
	if len(vs) == 0 {
		return "-"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}

// keysJudged is "in 211 of 260 keys judged", the summary's and the
// page's.
func keysJudged(r chaos.Findings) string {
	return fmt.Sprintf("in %d of %d keys judged", r.Judged, r.Keys)
}

// JSON writes a chaos run's result or a history's findings as indented
// JSON (--json).
func JSON(w io.Writer, v any) error { return words.JSON(w, v) }

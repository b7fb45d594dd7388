package reports

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/reports/internal/words"
	"github.com/idemcheck/idemcheck/scenarios"
)

// ConsoleOptions tune the console tree.
type ConsoleOptions struct {
	// Color adds ANSI colours; set it only when writing to a terminal.
	Color bool
	// Verbose also prints a passing result's reason where it has one
	// (every other status always says why).
	Verbose bool
}

// Markers of the console tree, one per effective status.
var markers = map[scenarios.Status]string{
	scenarios.Pass:         "✓",
	scenarios.Fail:         "✗",
	scenarios.Warn:         "!",
	scenarios.Skip:         "-",
	scenarios.Unverifiable: "?",
	scenarios.Inconclusive: "?",
	scenarios.Interrupted:  "~",
}

const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiGrey   = "\x1b[90m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

var colours = map[scenarios.Status]string{
	scenarios.Pass:         ansiGreen,
	scenarios.Fail:         ansiRed,
	scenarios.Warn:         ansiYellow,
	scenarios.Skip:         ansiGrey,
	scenarios.Unverifiable: ansiGrey,
	scenarios.Inconclusive: ansiYellow,
	scenarios.Interrupted:  ansiYellow,
}

// severity orders statuses so a case line shows its worst operation.
var severity = map[scenarios.Status]int{
	scenarios.Pass: 0, scenarios.Skip: 1, scenarios.Unverifiable: 2,
	scenarios.Inconclusive: 3, scenarios.Interrupted: 4, scenarios.Warn: 5, scenarios.Fail: 6,
}

// rank is a verdict's severity; an expected failure ranks like a skip,
// a MUST without evidence just below a warning.
// over is " over PROTOCOL" when the run recorded its protocol.
// heading is what a report is: a server's conformance run, or a client's
// certification (idemcheck client, judged by the client catalog).
func heading(rep *scenarios.Report) string {
	if rep.Client {
		return "idemcheck client certification"
	}
	return "idemcheck conformance"
}

// clientSubject is the client a client run certified: its command.
func clientSubject(rep *scenarios.Report) string { return strings.TrimPrefix(rep.Target, "client: ") }

func over(rep *scenarios.Report) string {
	if rep.Protocol == "" {
		return ""
	}
	return " over " + rep.Protocol
}

func rank(v Verdict) int {
	switch {
	case v.Expected:
		return severity[scenarios.Skip]
	case v.Incomplete:
		return severity[scenarios.Interrupted]
	}
	return severity[v.Status]
}

// Console writes the h2spec-like tree: families, then cases with their
// per-operation lines, then a recap of every failure with its evidence
// and of every MUST without evidence, then the summary line "N passed,
// N failed, N warned, N skipped", the requirement counts per level and
// the outcome with its exit code.
func Console(w io.Writer, rep *scenarios.Report, opt ConsoleOptions) error {
	c := &console{rep: rep, opt: opt}
	if rep.Client {
		// A client run's subject is the client, its cases run against the
		// stand-in, and it has no seed of its own.
		fmt.Fprintf(&c.b, "%s: %s against the stand-in%s, profile %s, strict %t\n",
			heading(rep), clientSubject(rep), over(rep), rep.Profile, rep.Strict)
	} else {
		fmt.Fprintf(&c.b, "%s: target %s%s, profile %s, strict %t, seed %d\n",
			heading(rep), rep.Target, over(rep), rep.Profile, rep.Strict, rep.Seed)
	}
	if rep.Command != "" {
		fmt.Fprintf(&c.b, "command: %s\n", rep.Command)
	}
	c.tree()
	c.recaps()
	c.summary()
	_, err := io.WriteString(w, c.b.String())
	return err
}

// console is one Console text being written.
type console struct {
	b   strings.Builder
	rep *scenarios.Report
	opt ConsoleOptions
}

func (c *console) paint(code, s string) string {
	if !c.opt.Color {
		return s
	}
	return code + s + ansiReset
}

func (c *console) mark(v Verdict) string {
	m := markers[v.Status]
	if v.Expected {
		m = "x" // failed as expected: not a failure of the run
	}
	return c.paint(colours[v.Status], m)
}

// tree writes each family with its cases, a case's line marked by its
// worst operation, then one line per operation (or one line for a case
// every operation of which skipped for one reason).
func (c *console) tree() {
	b, rep := &c.b, c.rep
	for _, fam := range byFamily(rep) {
		fmt.Fprintf(b, "\n%s\n", c.paint(ansiBold, fam.Name))
		for _, cs := range groupCases(fam.Results) {
			worst := Verdict{Status: scenarios.Pass}
			for _, r := range cs {
				if v := Effective(rep, r); rank(v) > rank(worst) {
					worst = v
				}
			}
			first := cs[0]
			head := fmt.Sprintf("  %s %s [%s] %s", c.mark(worst), first.ID, first.Level, strings.Join(first.Requirements, ", "))
			if reason, ops, ok := sameSkip(rep, cs); ok {
				// One line says why every operation skipped.
				fmt.Fprintf(b, "%s: %s (%s)\n", head, reason, strings.Join(ops, ", "))
				continue
			}
			b.WriteString(head + "\n")
			for _, r := range cs {
				v := Effective(rep, r)
				op := subject(rep, r)
				fmt.Fprintf(b, "      %s %s", c.mark(v), op)
				if d := r.Duration.Round(time.Millisecond); d > 0 {
					fmt.Fprintf(b, " %s", c.paint(ansiGrey, d.String()))
				}
				if detail := treeDetail(r, v, c.opt.Verbose); detail != "" {
					fmt.Fprintf(b, ": %s", detail)
				}
				b.WriteString("\n")
			}
		}
	}
}

// recaps writes the skips grouped by reason, every failure with its
// evidence and every MUST without evidence with what would decide it.
func (c *console) recaps() {
	b, rep := &c.b, c.rep
	if groups := skipGroups(rep); len(groups) > 0 {
		fmt.Fprintf(b, "\n%s\n", c.paint(ansiBold, "Skipped, by reason:"))
		for _, g := range groups {
			b.WriteString("  " + g.line() + "\n")
		}
	}

	if fails := Failures(rep); len(fails) > 0 {
		fmt.Fprintf(b, "\n%s\n", c.paint(ansiRed+ansiBold, "Failures:"))
		for i, r := range fails {
			fmt.Fprintf(b, "\n%d) ", i+1)
			text := FailureText(r, "   ")
			b.WriteString(strings.TrimPrefix(text, "   "))
			if note := Effective(rep, r).Note; note != "" {
				fmt.Fprintf(b, "   note:        %s\n", note)
			}
		}
	}

	if missing := WithoutEvidence(rep); len(missing) > 0 {
		fmt.Fprintf(b, "\n%s\n", c.paint(ansiYellow+ansiBold, "Not enough evidence (MUST):"))
		for _, r := range missing {
			fmt.Fprintf(b, "  ? %s %s: %s\n", r.Name(), r.Status, r.Reason)
			if a := scenarios.Advice(r); a != "" {
				fmt.Fprintf(b, "    to decide it: %s\n", a)
			}
		}
		b.WriteString("  or accept them with --allow-incomplete\n")
	}
}

// summary writes the counts, the requirements per level, the MUSTs not
// tested, the conformance level and the outcome.
func (c *console) summary() {
	b, rep := &c.b, c.rep
	n := Tally(rep)
	fmt.Fprintf(b, "\n%d passed, %d failed, %d warned, %d skipped\n", n.Passed, n.Failed, n.Warned, n.Skipped)
	interrupted := ""
	if n.Interrupted > 0 {
		interrupted = fmt.Sprintf(", %d interrupted", n.Interrupted)
	}
	fmt.Fprintf(b, "%d unverifiable, %d inconclusive, %d failed as expected%s; %d results in %s\n",
		n.Unverifiable, n.Inconclusive, n.ExpectedFailures, interrupted, n.Total(), words.Duration(rep.Duration))
	if rep.TTLSkipped > 0 {
		fmt.Fprintf(b, "ttl too short: %d case instances skipped; a declared ttl ≥ %s runs them all\n", rep.TTLSkipped, rep.NeedsTTL)
	}
	for _, line := range requirementLines(rep) {
		b.WriteString(line + "\n")
	}
	if untested := untestedLines(rep); len(untested) > 0 {
		fmt.Fprintf(b, "MUST not tested (%d):\n", len(untested))
		for _, line := range untested {
			b.WriteString("  - " + line + "\n")
		}
	}
	fmt.Fprintf(b, "conformance: %s\n", conformanceText(rep, rep.Conformance()))
	if rep.Interrupted {
		b.WriteString("interrupted: instances cut short are not judged; this report is partial\n")
	}
	fmt.Fprintf(b, "outcome: %s\n", outcomeText(rep.Judge().Outcome))
}

// treeDetail is the short text after an operation line: why it skipped,
// the failure or warning with its observation (and the run's rule that
// changed its status), why a case could not decide, or (verbose) a
// pass's remark.
func treeDetail(r scenarios.Result, v Verdict, verbose bool) string {
	unmet := r.Status == scenarios.Fail || r.Status == scenarios.Warn
	switch {
	case v.Note != "" && (v.Expected || r.Status != v.Status):
		if obs := observation(r); unmet && obs != "" {
			return obs + " (" + v.Note + ")"
		}
		return v.Note
	case unmet:
		if obs := observation(r); obs != "" {
			return obs
		}
		return string(r.Status)
	case v.Status != scenarios.Pass || verbose:
		return oneLine(r.Reason)
	}
	return ""
}

// sameSkip reports whether every operation of a case skipped for one
// reason, with the reason and the operations: the tree then says it once.
func sameSkip(rep *scenarios.Report, c []scenarios.Result) (reason string, ops []string, ok bool) {
	for _, r := range c {
		if v := rep.Effective(r); v.Status != scenarios.Skip || v.Expected || r.Reason != c[0].Reason {
			return "", nil, false
		}
		ops = append(ops, subject(rep, r))
	}
	return oneLine(c[0].Reason), ops, true
}

// subject names what a result line judged: its operation, else the whole
// target, or the client of a client run.
func subject(rep *scenarios.Report, r scenarios.Result) string {
	switch {
	case r.Operation != "":
		return r.Operation
	case rep.Client:
		return "(client)"
	}
	return "(target)"
}

// groupCases splits a family's results into runs of the same case ID.
func groupCases(rs []scenarios.Result) [][]scenarios.Result {
	var out [][]scenarios.Result
	idx := map[string]int{}
	for _, r := range rs {
		i, ok := idx[r.ID]
		if !ok {
			i = len(out)
			idx[r.ID] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

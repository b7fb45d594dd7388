package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/idemcheck/idemcheck/reports/internal/words"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Markdown writes a CI step summary (e.g. $GITHUB_STEP_SUMMARY): outcome,
// a counts table, a per-family table, then each failure folded in a
// <details> block with its requirement, expected vs observed and curl.
func Markdown(w io.Writer, rep *scenarios.Report) error { return markdown(w, rep, nil) }

// MarkdownAgainst is Markdown for a run judged against an expected report
// (run --expect): the heading gives the comparison's outcome, which the
// step's exit follows, beside the run's own, and the verdicts worse and
// better than expected are listed, so the summary never shows a failure
// the job passed, or the reverse, unexplained.
func MarkdownAgainst(expected *scenarios.Report, name string) func(io.Writer, *scenarios.Report) error {
	return func(w io.Writer, rep *scenarios.Report) error {
		worse, better := Compare(expected, rep)
		return markdown(w, rep, &expectation{name: name, worse: worse, better: better})
	}
}

// expectation is a run's comparison with an expected report.
type expectation struct {
	name          string
	worse, better []string
}

var outcomeIcon = map[scenarios.RunOutcome]string{scenarios.OutcomePass: "✅", scenarios.OutcomeFail: "❌",
	scenarios.OutcomeIncomplete: "⚠️", scenarios.OutcomeInterrupted: "⏹️"}

func markdown(w io.Writer, rep *scenarios.Report, exp *expectation) error {
	var b strings.Builder
	o := rep.Judge().Outcome
	h := heading(rep)
	switch {
	case exp == nil || o == scenarios.OutcomeInterrupted:
		fmt.Fprintf(&b, "## %s: %s %s\n\n", h, outcomeIcon[o], outcomeText(o))
	case len(exp.worse) > 0:
		fmt.Fprintf(&b, "## %s: ❌ %d verdicts worse than expected (the run itself: %s)\n\n", h, len(exp.worse), outcomeText(o))
	default:
		fmt.Fprintf(&b, "## %s: ✅ no verdict worse than expected (the run itself: %s)\n\n", h, outcomeText(o))
	}
	if rep.Client {
		fmt.Fprintf(&b, "Client `%s` against the stand-in%s · profile `%s` · strict `%t` · %s\n\n",
			strings.ReplaceAll(clientSubject(rep), "`", "'"), over(rep), rep.Profile, rep.Strict, words.Duration(rep.Duration))
	} else {
		fmt.Fprintf(&b, "Target `%s`%s · profile `%s` · strict `%t` · seed `%d` · %s\n\n",
			rep.Target, over(rep), rep.Profile, rep.Strict, rep.Seed, words.Duration(rep.Duration))
	}
	fmt.Fprintf(&b, "**Conformance: %s**\n\n", mdEscape(conformanceText(rep, rep.Conformance())))
	if rep.Command != "" {
		fmt.Fprintf(&b, "Command: `%s`\n\n", strings.ReplaceAll(rep.Command, "`", "'"))
	}

	if exp != nil {
		fmt.Fprintf(&b, "Judged against the expected report `%s` (`--expect`): the step fails only for a verdict worse than it.\n\n", strings.ReplaceAll(exp.name, "`", "'"))
		for _, l := range []struct {
			title string
			lines []string
		}{{"Worse than expected", exp.worse}, {"Better than expected", exp.better}} {
			if len(l.lines) == 0 {
				continue
			}
			fmt.Fprintf(&b, "**%s (%d):**\n\n", l.title, len(l.lines))
			for _, line := range l.lines {
				fmt.Fprintf(&b, "- %s\n", mdEscape(line))
			}
			b.WriteString("\n")
		}
	}
	c := Tally(rep)
	if rep.Interrupted {
		b.WriteString("**Interrupted**: instances cut short are not judged; this report is partial.\n\n")
	}
	b.WriteString("| passed | failed | warned | skipped | unverifiable | inconclusive | interrupted | failed as expected |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %d | %d |\n\n",
		c.Passed, c.Failed, c.Warned, c.Skipped, c.Unverifiable, c.Inconclusive, c.Interrupted, c.ExpectedFailures)

	reqs := rep.Requirements()
	b.WriteString("| requirements | verified | violated | without evidence | not tested |\n|---|---:|---:|---:|---:|\n")
	for _, l := range []scenarios.Level{scenarios.Must, scenarios.Should} {
		rc := reqs[l]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", l, rc.Verified, rc.Violated, rc.WithoutEvidence, rc.NotTested)
	}
	b.WriteString("\n")

	b.WriteString("| family | ✓ | ✗ | ! | - | ? |\n|---|---:|---:|---:|---:|---:|\n")
	for _, fam := range byFamily(rep) {
		sub := *rep
		sub.Results = fam.Results
		fc := Tally(&sub)
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d |\n", fam.Name,
			fc.Passed, fc.Failed, fc.Warned, fc.Skipped+fc.ExpectedFailures, fc.Unverifiable+fc.Inconclusive+fc.Interrupted)
	}

	if fails := Failures(rep); len(fails) > 0 {
		b.WriteString("\n### Failures\n\n")
		for _, r := range fails {
			fmt.Fprintf(&b, "<details><summary>✗ <code>%s</code> — %s %s</summary>\n\n",
				mdEscape(r.Name()), r.Level, mdEscape(strings.Join(r.Requirements, ", ")))
			b.WriteString("```text\n" + fenceSafe(FailureText(r, "")))
			if note := Effective(rep, r).Note; note != "" {
				b.WriteString("note:        " + note + "\n")
			}
			b.WriteString("```\n\n</details>\n\n")
		}
	}
	if missing := WithoutEvidence(rep); len(missing) > 0 {
		b.WriteString("\n### Not enough evidence (MUST)\n\nThese hold the run back (exit 5) unless `--allow-incomplete`:\n\n")
		for _, r := range missing {
			fmt.Fprintf(&b, "- `%s` %s: %s\n", r.Name(), r.Status, mdEscape(oneLine(r.Reason)))
		}
	}
	if untested := untestedLines(rep); len(untested) > 0 {
		b.WriteString("\n### MUST not tested\n\n")
		for _, line := range untested {
			fmt.Fprintf(&b, "- %s\n", mdEscape(line))
		}
	}
	if warns := warnings(rep); len(warns) > 0 {
		b.WriteString("\n### Warnings (SHOULD unmet)\n\n")
		for _, r := range warns {
			fmt.Fprintf(&b, "- `%s`: %s\n", r.Name(), mdEscape(observation(r)))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func warnings(rep *scenarios.Report) []scenarios.Result {
	var out []scenarios.Result
	for _, r := range rep.Results {
		if Effective(rep, r).Status == scenarios.Warn {
			out = append(out, r)
		}
	}
	return out
}

// mdEscape keeps HTML and table syntax in text from breaking the summary.
func mdEscape(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;", "|", `\|`).Replace(s)
}

// fenceSafe stops evidence from closing the code fence it sits in.
func fenceSafe(s string) string { return strings.ReplaceAll(s, "```", "`\u200b``") }

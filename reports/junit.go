package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/reports/internal/words"
	"github.com/idemcheck/idemcheck/scenarios"
)

// JUnit XML as Jenkins, GitLab, the GitHub test-reporter actions and Azure
// DevOps read it (the common "JUnit XSD" shape): every testcase has a name
// and a classname; a failure has a message and the evidence as text;
// skip, unverifiable and inconclusive results are <skipped> with a reason,
// except a MUST without evidence, which is an <error> (it holds the run
// back: exit 5) as is an instance cut short by an interruption (exit 130).
// The suites' properties carry the run's outcome, exit code, conformance
// level (and what blocks the next one) and command line; a client run's
// suites are named "idemcheck client certification" and name the client.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",cdata"`
}

// junitText is element text kept readable in a CDATA section.
type junitText struct {
	Text string `xml:",cdata"`
}

// JUnit writes the report as JUnit XML: one testsuite per family, one
// testcase per result (classname = family, name = case@operation).
func JUnit(w io.Writer, rep *scenarios.Report) error {
	out := junitSuites{Name: "idemcheck", Time: seconds(rep.Duration)}
	if rep.Client {
		out.Name = heading(rep)
	}
	stamp := rep.Started.UTC().Format(time.RFC3339)
	outcome := rep.Judge().Outcome
	level := rep.Conformance()
	for _, fam := range byFamily(rep) {
		s := junitSuite{
			Name:      fam.Name,
			Timestamp: stamp,
			Properties: []junitProperty{
				{Name: "target", Value: rep.Target},
				{Name: "profile", Value: rep.Profile},
				{Name: "protocol", Value: rep.Protocol},
				{Name: "strict", Value: fmt.Sprint(rep.Strict)},
				{Name: "seed", Value: fmt.Sprint(rep.Seed)},
				{Name: "allow_incomplete", Value: fmt.Sprint(rep.AllowIncomplete)},
				{Name: "interrupted", Value: fmt.Sprint(rep.Interrupted)},
				{Name: "outcome", Value: string(outcome)},
				{Name: "exit_code", Value: fmt.Sprint(outcome.ExitCode())},
				{Name: "conformance", Value: level.Level},
				{Name: "conformance_detail", Value: conformanceText(rep, level)},
				{Name: "command", Value: rep.Command},
			},
		}
		if rep.Client { // the client certified, beside the stand-in's profile
			s.Properties = append(s.Properties, junitProperty{Name: "client", Value: clientSubject(rep)})
		}
		var total time.Duration
		for _, r := range fam.Results {
			c := junitCase{Name: r.Name(), Classname: fam.Name, Time: seconds(r.Duration)}
			total += r.Duration
			v := Effective(rep, r)
			switch {
			case v.Expected:
				c.Skipped = &junitMessage{Message: oneLine(v.Note + ": " + summary(r))}
			case v.Status == scenarios.Fail:
				msg := summary(r)
				if v.Note != "" {
					msg = v.Note + ": " + msg
				}
				c.Failure = &junitMessage{Message: oneLine(msg), Type: string(r.Level), Text: FailureText(r, "")}
			case v.Incomplete:
				c.Error = &junitMessage{Message: oneLine(words.NotEnoughEvidence + ": " + string(r.Status) + ": " + r.Reason),
					Type: "insufficient-evidence", Text: v.Note}
			case v.Status == scenarios.Interrupted:
				c.Error = &junitMessage{Message: oneLine("interrupted: " + r.Reason), Type: "interrupted"}
			case v.Status == scenarios.Warn:
				// A SHOULD unmet without --strict passes the gate but is shown.
				c.SystemOut = &junitText{Text: "WARN (SHOULD unmet)\n" + FailureText(r, "")}
			case v.Status == scenarios.Skip || v.Status == scenarios.Unverifiable || v.Status == scenarios.Inconclusive:
				c.Skipped = &junitMessage{Message: oneLine(string(v.Status) + ": " + r.Reason)}
			}
			if c.Failure != nil {
				s.Failures++
			}
			if c.Error != nil {
				s.Errors++
			}
			if c.Skipped != nil {
				s.Skipped++
			}
			s.Cases = append(s.Cases, c)
		}
		s.Tests = len(s.Cases)
		s.Time = seconds(total)
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Skipped += s.Skipped
		out.Suites = append(out.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// summary is a result's failure in one phrase.
func summary(r scenarios.Result) string {
	switch {
	case r.Expected != "" || r.Observed != "":
		return fmt.Sprintf("expected %s, observed %s", r.Expected, r.Observed)
	case r.Reason != "":
		return r.Reason
	}
	return string(r.Status)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

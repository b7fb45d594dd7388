package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck/reports/internal/page"
	"github.com/idemcheck/idemcheck/reports/internal/words"
	"github.com/idemcheck/idemcheck/scenarios"
)

// The page's template (beside the shell of every report page,
// reports/internal/page), style and script, inlined so the report is one
// self-contained file (no network, opens from disk).
var (
	//go:embed html/report.tmpl
	htmlTemplate string
	//go:embed html/report.css
	htmlCSS string
	//go:embed html/report.js
	htmlJS string
)

var htmlPage = page.New("report", htmlTemplate)

// maxHTMLBody bounds a body shown in the HTML report; the JSON report
// keeps it whole.
const maxHTMLBody = 8 << 10

// maxHTMLExchanges bounds the exchanges shown for one instance (a burst
// case has dozens); the JSON report keeps them all.
const maxHTMLExchanges = 40

type htmlData struct {
	// Heading says what the page reports (heading); Subject is what was
	// judged: the target, or the client of a client run.
	Heading, Subject     string
	Client               bool
	Target, Profile      string
	Protocol             string
	Strict, Allow        bool
	Interrupted          bool
	Seed                 uint64
	Started, Duration    string
	Outcome, OutcomeText string
	Counts               Counts
	Levels               []htmlLevel
	Filters              []htmlFilter
	Families             []htmlFamily
	CSS                  template.CSS
	JS                   template.JS
	Problems, NoEvidence []string
	ExitCode             int
	Level, LevelText     string
	Command              string
	Untested             []string
	SkipGroups           []string // skipGroups' lines: why the skips did not run
}

type htmlLevel struct {
	Level string
	scenarios.RequirementCounts
}

type htmlFilter struct {
	Key, Label string
	N          int
}

type htmlFamily struct {
	Name    string
	Counts  Counts
	Results []htmlResult
}

type htmlResult struct {
	Name, ID, Operation, Level   string
	Requirements                 string
	Requirement, Explanation     string
	Key, Label, Status           string // filter key, shown verdict, the case's own status
	Expected, Observed, Reason   string
	Note                         string
	Why                          string   // shown without expanding: the console tree's text (treeDetail)
	Downstream                   []string // the double's calls per key
	Events                       []string // the events published per key
	Duration                     string
	Exchanges                    []htmlExchange
	MoreExchanges                int
	Timeline                     []htmlTimeline // a client run's attempts per case run
	HasVerdictText, StatusDiffer bool
}

type htmlExchange struct {
	N                    int
	Label, Method, URL   string
	Result               string // "201 (3ms)" or "error: ..."
	Failed               bool
	ReqHeader, ReqBody   string
	RespHeader, RespBody string
	HasResponse          bool
	Curl                 string
}

// filterKey is the status a result is filtered and coloured by: its
// effective verdict, with expected failures and MUSTs without evidence
// apart from their status.
func filterKey(v Verdict) string {
	switch {
	case v.Expected:
		return "expected"
	case v.Incomplete:
		return "incomplete"
	}
	return string(v.Status)
}

var filterLabels = []htmlFilter{
	{Key: "fail", Label: "failed"}, {Key: "incomplete", Label: "MUST without evidence"},
	{Key: "warn", Label: "warned"}, {Key: "pass", Label: "passed"}, {Key: "skip", Label: "skipped"},
	{Key: "unverifiable", Label: "unverifiable"}, {Key: "inconclusive", Label: "inconclusive"},
	{Key: "interrupted", Label: "interrupted"}, {Key: "expected", Label: "failed as expected"},
}

// HTML writes the conformance report as one self-contained page: the
// outcome, requirement coverage per level (verified, violated, without
// evidence), counts, the skips grouped by reason, a filter by status, and
// per family every instance, each not passing with its reason in view,
// expandable to its spec sentence, expected vs observed, exchanges and a
// curl reproduction of each. Counts are Tally's and Requirements', the
// same as the JSON report's.
func HTML(w io.Writer, rep *scenarios.Report) error {
	j := rep.Judge()
	d := htmlData{
		Heading: heading(rep), Subject: rep.Target, Client: rep.Client,
		Target: rep.Target, Profile: rep.Profile, Protocol: rep.Protocol, Strict: rep.Strict, Allow: rep.AllowIncomplete,
		Interrupted: rep.Interrupted, Seed: rep.Seed,
		Started:  rep.Started.UTC().Format(time.RFC3339),
		Duration: words.Duration(rep.Duration),
		Outcome:  string(j.Outcome), OutcomeText: outcomeText(j.Outcome), ExitCode: j.Outcome.ExitCode(),
		Counts: Tally(rep),
		CSS:    template.CSS(htmlCSS), JS: template.JS(htmlJS),
		Problems: j.Problems, NoEvidence: j.WithoutEvidence,
		Command: rep.Command, Untested: untestedLines(rep),
	}
	if rep.Client {
		d.Subject = clientSubject(rep)
	}
	for _, g := range skipGroups(rep) {
		d.SkipGroups = append(d.SkipGroups, g.line())
	}
	level := rep.Conformance()
	d.Level, d.LevelText = level.Level, conformanceText(rep, level)
	reqs := rep.Requirements()
	for _, l := range []scenarios.Level{scenarios.Must, scenarios.Should} {
		d.Levels = append(d.Levels, htmlLevel{Level: string(l), RequirementCounts: reqs[l]})
	}
	perKey := map[string]int{}
	for _, fam := range byFamily(rep) {
		sub := *rep
		sub.Results = fam.Results
		hf := htmlFamily{Name: fam.Name, Counts: Tally(&sub)}
		for _, r := range fam.Results {
			hr := htmlResultOf(rep, r)
			perKey[hr.Key]++
			hf.Results = append(hf.Results, hr)
		}
		d.Families = append(d.Families, hf)
	}
	for _, f := range filterLabels {
		if n := perKey[f.Key]; n > 0 {
			f.N = n
			d.Filters = append(d.Filters, f)
		}
	}
	return htmlPage().Execute(w, d)
}

func htmlResultOf(rep *scenarios.Report, r scenarios.Result) htmlResult {
	v := rep.Effective(r)
	hr := htmlResult{
		Name: r.Name(), ID: r.ID, Operation: r.Operation, Level: string(r.Level),
		Requirements: strings.Join(r.Requirements, ", "), Requirement: r.Requirement, Explanation: r.Explanation,
		Key: filterKey(v), Status: string(r.Status),
		Expected: r.Expected, Observed: r.Observed, Reason: r.Reason, Note: v.Note, Downstream: r.Downstream, Events: r.Events,
		Why:      treeDetail(r, v, false),
		Duration: words.Duration(r.Duration),
	}
	hr.Label = string(v.Status)
	for _, f := range filterLabels {
		if f.Key == hr.Key {
			hr.Label = f.Label
		}
	}
	hr.StatusDiffer = string(v.Status) != string(r.Status)
	if rep.Client {
		hr.Timeline = timelines(r)
	}
	hr.HasVerdictText = hr.Expected != "" || hr.Observed != "" || hr.Reason != "" || hr.Note != "" || len(hr.Downstream) > 0 || len(hr.Events) > 0
	for i, ex := range r.Exchanges {
		if i == maxHTMLExchanges {
			hr.MoreExchanges = len(r.Exchanges) - i
			break
		}
		hx := htmlExchange{N: i + 1, Label: ex.Label, Method: ex.Request.Method, URL: ex.Request.URL, Curl: ex.Curl()}
		if hx.Label == "" {
			hx.Label = "request"
		}
		hx.ReqHeader = headerText(ex.Request.Header)
		hx.ReqBody = htmlBody(ex.Request.Body)
		dur := ex.Duration.Round(100 * time.Microsecond)
		switch {
		case ex.Response != nil:
			hx.HasResponse = true
			hx.Result = fmt.Sprintf("%d (%s)", ex.Response.Status, dur)
			hx.RespHeader = headerText(ex.Response.Header)
			hx.RespBody = htmlBody(ex.Response.Body)
		case ex.Error != "":
			hx.Result, hx.Failed = fmt.Sprintf("error: %s (%s)", ex.Error, dur), true
		}
		hr.Exchanges = append(hr.Exchanges, hx)
	}
	return hr
}

func headerText(h http.Header) string {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		for _, v := range h[name] {
			b.WriteString(name + ": " + v + "\n")
		}
	}
	return b.String()
}

// htmlBody is body as text, cut at maxHTMLBody bytes.
func htmlBody(body []byte) string {
	if !utf8.Valid(body) {
		return fmt.Sprintf("(%d bytes, not UTF-8; the JSON report has them in base64)", len(body))
	}
	if len(body) > maxHTMLBody {
		return strings.ToValidUTF8(string(body[:maxHTMLBody]), "") + fmt.Sprintf("\n... (%d bytes)", len(body))
	}
	return string(body)
}

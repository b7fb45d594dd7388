package loadreport

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/reports/internal/page"
	"github.com/idemcheck/idemcheck/reports/internal/words"
)

//go:embed html/report.tmpl
var htmlTemplate string

var htmlPage = page.New("load", htmlTemplate)

type htmlData struct {
	R        *load.Summary
	Started  string
	Duration string
	TimePlot template.HTML
	HDRPlot  template.HTML
	Cols     []load.Path
	Rows     []tableRow
	Ratios   []htmlKV
	Oracle   string
	// Delayed is the worker-cap warning: a page read without the console
	// output must not look better than the run was.
	Delayed string
	// Injected says what the run merged into every request body and
	// the delay that asks of each execution (injectedLine).
	Injected string
	Breached int
	// Judged is the checks' headline: violations of the answers judged,
	// and how many were not judged and why.
	Judged  string
	Verdict page.Verdict
}

type htmlKV struct {
	K string
	V string
}

// HTML writes the load report as one self-contained page: the
// verdict (thresholds with pass/breach, violations), the latency over time
// with every path its own series, the percentile table of the paths side
// by side, the HDR percentile plot, ratios, phases and the oracle. It
// needs the time plot (WithTimePlot, or ReadResults with timePlot).
func HTML(w io.Writer, r *load.Summary) error {
	if r.TimePlot() == nil {
		return errors.New("no time plot collected (WithTimePlot)")
	}
	var tp, hdr bytes.Buffer
	if err := timePlotSVG(&tp, r.TimePlot(), "Latency over time — "+r.Target); err != nil {
		return err
	}
	if err := HDRPlot(&hdr, r); err != nil {
		return err
	}
	d := htmlData{
		R: r, Started: r.Started.UTC().Format(time.RFC3339),
		Duration: words.Duration(time.Duration(r.DurationS * float64(time.Second))),
		// Both SVGs are written by this package with escaped text.
		TimePlot: template.HTML(tp.String()), HDRPlot: template.HTML(hdr.String()),
		Oracle: oracleLine(r), Breached: len(r.Breached()), Delayed: r.DelayWarning(), Judged: judgedLine(r),
		Injected: injectedLine(r),
	}
	d.Cols, d.Rows = table(r)
	for _, k := range slices.Sorted(maps.Keys(r.Ratios)) {
		d.Ratios = append(d.Ratios, htmlKV{K: k, V: fmt.Sprintf("%.3f", r.Ratios[k])})
	}
	switch {
	case d.Breached > 0:
		d.Verdict = page.Verdict{Class: page.Bad, Text: fmt.Sprintf("%d of %d thresholds breached (exit 3)", d.Breached, len(r.Thresholds))}
	case r.Violations > 0:
		d.Verdict = page.Verdict{Class: page.Bad, Text: fmt.Sprintf("%d idempotency violations (exit 1)", r.Violations)}
	case r.MostlyUnjudged():
		d.Verdict = page.Verdict{Class: page.Bad, Text: fmt.Sprintf("%s: %d of %d answers not judged (exit 5 unless --allow-incomplete)", words.NotEnoughEvidence, r.NotJudgedCount(), r.NotJudgedCount()+r.Judged)}
	default:
		d.Verdict = page.Verdict{Class: page.Good, Text: "no violation, no threshold breached"}
	}
	return htmlPage().Execute(w, d)
}

package chaosreport

import (
	_ "embed"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/reports/internal/page"
	"github.com/idemcheck/idemcheck/reports/internal/words"
)

//go:embed html/report.tmpl
var htmlTemplate string

var htmlPage = page.New("chaos", htmlTemplate)

// HTMLRun is what the page says about the run beside the checker's
// report: the target, what was asked for and how long it took.
type HTMLRun struct {
	Target      string
	Requested   int // operations asked for (0: a proxy's history)
	Elapsed     time.Duration
	Faults      []string // the fault specs as given
	Seed        uint64
	Interrupted bool
	Notes       []string
}

// Bounds of the page: the timeline's slices, and the keys drilled down
// besides those with a finding (every violation, legal re-execution and
// key not judged is always shown).
const (
	htmlSlices    = 100
	htmlOtherKeys = 200
	htmlOpenKeys  = 10 // violations shown open
)

// Key classes, worst first: the drill-down's order and colours.
const (
	classViolation = "violation"
	classUnjudged  = "unjudged"
	classLegal     = "legal"
	classClean     = "clean"
)

type htmlKey struct {
	Key, Class, Label string
	Findings          []chaos.KeyViolation
	Op                *chaos.Op
	OracleText        string
	// OpStatus is the op's final status: "409", or over gRPC its code
	// as the client got it ("ABORTED (409)").
	OpStatus string
	Attempts []htmlAttempt
	Open     bool
	last     time.Time
}

type htmlAttempt struct {
	at                   time.Time
	N                    int
	At, Duration         string
	Fault, Client        string
	Status               int
	StatusText           string // "409", or over gRPC "ABORTED (409)"
	code                 string // the gRPC code the client got
	Upstream             []string
	Cut, Faulted, Errors bool
}

type htmlTick struct {
	X           float64
	Key, Class  string
	Title, Href string
}

type htmlBar struct {
	X, W         float64
	Y, H         float64 // attempts lane
	Faults       []htmlSeg
	Count, Fault int
	Title        string
}

type htmlSeg struct {
	Y, H  float64
	Kind  string
	Color string
}

type htmlLegend struct{ Kind, Color string }

type htmlData struct {
	R                chaos.Findings
	Run              HTMLRun
	Verdict          page.Verdict
	Faults, Outcomes string
	NotJudged        string
	Span             string
	Bars             []htmlBar
	Ticks            []htmlTick
	Legend           []htmlLegend
	Axis             []htmlAxis
	Keys             []htmlKey
	Shown, More      int
	TTL              string
}

type htmlAxis struct {
	X     float64
	Label string
}

// Timeline geometry (SVG user units).
const (
	tlLeft, tlWidth         = 110.0, 860.0
	tlAttemptsY, tlAttemptH = 20.0, 90.0
	tlFaultsY, tlFaultsH    = 130.0, 70.0
	tlTicksY, tlTicksH      = 220.0, 40.0
)

// faultColors colours fault kinds in a fixed order (others grey).
var faultColors = map[string]string{
	"drop-response": "#bc4c00", "duplicate": "#8250df", "delay": "#0969da", "status": "#9a6700",
	"reset-midbody": "#cf222e", "truncate-request": "#1b7c83", "drop-request": "#6e7781", "hangup": "#953800",
}

// HTML writes the chaos report as one self-contained page (no
// script, no network): the verdict and counts, a timeline of the run
// (attempts per slice, the faults injected in them by kind, and a tick per
// key with a finding: violation, legal fresh execution after the TTL, not
// judged, each linking to its key), then the per-key drill-down: every key
// with a finding (violations first, open) and up to 200 others, each with
// its operation and every attempt (fault, upstream answers, what the
// client got). hist is the run's JSONL history, rep its checker's report.
func HTML(w io.Writer, hist io.Reader, rep chaos.Findings, run HTMLRun) error {
	d := htmlData{R: rep, Run: run, Faults: words.Counts(rep.Faults), NotJudged: words.Counts(rep.NotJudged)}
	if rep.TTL > 0 {
		d.TTL = fmt.Sprintf("%s − margin %s", rep.TTL, rep.Margin)
	}
	d.Verdict = verdict(rep)
	d.Outcomes = words.Counts(rep.Outcomes)

	keys := keysWithFindings(rep)
	all, err := keys.readHistory(hist)
	if err != nil {
		return err
	}
	d.More = keys.more

	// The timeline: slices over the run, from its first attempt.
	start, span := runSpan(all)
	d.Span = words.Duration(span)
	x := func(t time.Time) float64 {
		return tlLeft + tlWidth*float64(t.Sub(start))/float64(span)
	}
	d.drawTimeline(all, start, span)
	d.drillDown(keys, start, x)
	d.Shown = len(d.Keys)
	return htmlPage().Execute(w, d)
}

// htmlKeys are the keys the drill-down may show: every key with a
// finding, and up to htmlOtherKeys more in the order the history names
// them; the rest are counted and hidden.
type htmlKeys struct {
	byKey  map[string]*htmlKey
	order  []string // first-seen order of keys
	others int      // clean keys kept
	more   int      // keys hidden
}

// moment is one attempt as the timeline sees it.
type moment struct {
	at    time.Time
	fault string
}

// keysWithFindings starts the drill-down with the report's findings, in
// the report's order, classed by kind.
func keysWithFindings(rep chaos.Findings) *htmlKeys {
	ks := &htmlKeys{byKey: map[string]*htmlKey{}}
	add := func(vs []chaos.KeyViolation, class string) {
		for _, v := range vs {
			k := ks.byKey[v.Key]
			if k == nil {
				k = &htmlKey{Key: v.Key, Class: class}
				ks.byKey[v.Key] = k
			}
			k.Findings = append(k.Findings, v)
		}
	}
	add(rep.Violations, classViolation)
	add(rep.Unjudged, classUnjudged)
	add(rep.AfterTTL, classLegal)
	return ks
}

// readHistory gives each shown key its attempts and operation, and
// returns every attempt of the run for the timeline.
func (ks *htmlKeys) readHistory(hist io.Reader) ([]moment, error) {
	keys := ks.byKey
	var all []moment
	err := chaos.ScanHistory(hist, func(ev *chaos.Event) {
		all = append(all, moment{ev.Time, ev.Fault})
		if ev.Key == "" {
			return
		}
		k := keys[ev.Key]
		if k == nil {
			if ks.others == htmlOtherKeys {
				ks.more++
				keys[ev.Key] = &htmlKey{Key: ev.Key, Class: "hidden"}
				return
			}
			ks.others++
			k = &htmlKey{Key: ev.Key, Class: classClean}
			keys[ev.Key] = k
		}
		if k.Class == "hidden" {
			return
		}
		if len(k.Attempts) == 0 {
			ks.order = append(ks.order, ev.Key)
		}
		k.Attempts = append(k.Attempts, attemptOf(ev))
		if ev.Time.After(k.last) {
			k.last = ev.Time
		}
	}, func(op *chaos.Op) {
		if k := keys[op.Key]; k != nil && k.Class != "hidden" {
			k.Op = op
		}
	})
	return all, err
}

// runSpan is the stretch the timeline draws: from the run's first attempt
// to its last, at least a millisecond.
func runSpan(all []moment) (start time.Time, span time.Duration) {
	var end time.Time
	for _, a := range all {
		if start.IsZero() || a.at.Before(start) {
			start = a.at
		}
		if a.at.After(end) {
			end = a.at
		}
	}
	return start, max(end.Sub(start), time.Millisecond)
}

// drawTimeline counts the attempts and faults of each slice of the run
// into bars (faults stacked by kind), with their legend and time axis.
func (d *htmlData) drawTimeline(all []moment, start time.Time, span time.Duration) {
	counts := make([]int, htmlSlices)
	faults := make([]map[string]int, htmlSlices)
	kinds := map[string]bool{}
	for _, a := range all {
		i := min(int(float64(a.at.Sub(start))/float64(span)*htmlSlices), htmlSlices-1)
		counts[i]++
		if a.fault != "" {
			if faults[i] == nil {
				faults[i] = map[string]int{}
			}
			faults[i][a.fault]++
			kinds[a.fault] = true
		}
	}
	peak := max(slices.Max(append(counts, 1)), 1)
	kindList := slices.Sorted(maps.Keys(kinds))
	for _, k := range kindList {
		d.Legend = append(d.Legend, htmlLegend{Kind: k, Color: faultColor(k)})
	}
	bw := tlWidth / htmlSlices
	sliceDur := span / htmlSlices
	for i, n := range counts {
		b := htmlBar{X: tlLeft + float64(i)*bw, W: bw * 0.9, Count: n}
		b.H = tlAttemptH * float64(n) / float64(peak)
		b.Y = tlAttemptsY + tlAttemptH - b.H
		y := tlFaultsY + tlFaultsH
		var parts []string
		for _, k := range kindList {
			c := faults[i][k]
			if c == 0 {
				continue
			}
			b.Fault += c
			h := tlFaultsH * float64(c) / float64(peak)
			y -= h
			b.Faults = append(b.Faults, htmlSeg{Y: y, H: h, Kind: k, Color: faultColor(k)})
			parts = append(parts, fmt.Sprintf("%s %d", k, c))
		}
		b.Title = fmt.Sprintf("%s–%s: %d attempts", words.Duration(sliceDur*time.Duration(i)), words.Duration(sliceDur*time.Duration(i+1)), n)
		if len(parts) > 0 {
			b.Title += ", faults: " + strings.Join(parts, ", ")
		}
		d.Bars = append(d.Bars, b)
	}
	for i := range 5 {
		f := float64(i) / 4
		d.Axis = append(d.Axis, htmlAxis{X: tlLeft + tlWidth*f, Label: words.Duration(time.Duration(float64(span) * f))})
	}
}

// drillDown lists the shown keys, findings worst first, then the other
// keys in order; the first violations open, and every key with a finding
// gets its tick on the timeline at x of its last attempt.
func (d *htmlData) drillDown(keys *htmlKeys, start time.Time, x func(time.Time) float64) {
	rank := map[string]int{classViolation: 0, classUnjudged: 1, classLegal: 2, classClean: 3}
	var shown []*htmlKey
	for _, k := range keys.byKey {
		if k.Class != "hidden" {
			shown = append(shown, k)
		}
	}
	pos := map[string]int{}
	for i, k := range keys.order {
		pos[k] = i
	}
	sort.SliceStable(shown, func(i, j int) bool {
		a, b := shown[i], shown[j]
		if rank[a.Class] != rank[b.Class] {
			return rank[a.Class] < rank[b.Class]
		}
		return pos[a.Key] < pos[b.Key]
	})
	opened := 0
	for _, k := range shown {
		for i := range k.Attempts {
			k.Attempts[i].At = "+" + words.Duration(k.Attempts[i].at.Sub(start))
		}
		k.Label = keyLabel(k)
		if k.Op != nil && k.Op.Oracle != nil {
			k.OracleText = fmt.Sprint(*k.Op.Oracle)
		}
		if k.Op != nil && k.Op.Status != 0 {
			k.OpStatus = k.opStatus()
		}
		if k.Class == classViolation && opened < htmlOpenKeys {
			k.Open = true
			opened++
		}
		if k.Class != classClean && !k.last.IsZero() {
			d.Ticks = append(d.Ticks, htmlTick{X: x(k.last), Key: k.Key, Class: k.Class, Href: "#key-" + k.Key,
				Title: fmt.Sprintf("%s: %s", k.Key, k.Label)})
		}
		d.Keys = append(d.Keys, *k)
	}
}

// attemptOf is one attempt's row of the drill-down.
func attemptOf(ev *chaos.Event) htmlAttempt {
	a := htmlAttempt{at: ev.Time, N: ev.Attempt, Duration: time.Duration(ev.DurationNS).Round(100 * time.Microsecond).String(),
		Fault: ev.Fault, Client: ev.Client, Status: ev.Status, Faulted: ev.Fault != "", Cut: ev.CutByHarness()}
	a.code = ev.ClientCode()
	a.StatusText = chaos.StatusText(ev.Status, a.code)
	for _, u := range ev.Upstream {
		s := fmt.Sprintf("sent +%s", time.Duration(u.SentNS).Round(100*time.Microsecond))
		switch {
		case u.Error != "":
			s += ": error " + u.Error
			a.Errors = true
		case u.Status != 0:
			s += ": " + chaos.StatusText(u.Status, u.GRPCCode)
		}
		if u.ID != "" {
			s += " id " + u.ID
		}
		a.Upstream = append(a.Upstream, s)
	}
	return a
}

// keyLabel says in a few words why a key is where it is.
func keyLabel(k *htmlKey) string {
	var rules []string
	for _, f := range k.Findings {
		rules = append(rules, f.Rule)
	}
	switch k.Class {
	case classViolation:
		return "violation: " + strings.Join(rules, ", ")
	case classUnjudged:
		return "not judged: " + k.Findings[0].Reason
	case classLegal:
		return "legal fresh execution after the TTL"
	}
	if k.Op != nil {
		return "clean, client " + k.Op.Outcome
	}
	return "clean"
}

// verdict is the page's headline and its colour, in the console's words.
func verdict(r chaos.Findings) page.Verdict {
	judged := keysJudged(r)
	switch {
	case len(r.Violations) > 0:
		return page.Verdict{Text: fmt.Sprintf("%d exactly-once violations %s", len(r.Violations), judged), Class: page.Bad}
	case !r.Exercised:
		return page.Verdict{Text: fmt.Sprintf("not exercised: none of %d operations shows an execution", r.Ops), Class: page.Bad}
	case r.MostlyUnjudged():
		return page.Verdict{Text: words.NotEnoughEvidence + ": 0 violations " + judged, Class: page.Bad}
	}
	return page.Verdict{Text: "exactly-once OK: 0 violations " + judged, Class: page.Good}
}

func faultColor(kind string) string {
	if c, ok := faultColors[kind]; ok {
		return c
	}
	return "#8c959f"
}

// opStatus is the op's final status as the client got it: over gRPC the
// codes its attempts answered with that status (the op records the
// status only).
func (k *htmlKey) opStatus() string {
	var codes []string
	for _, a := range k.Attempts {
		if a.code != "" && a.Status == k.Op.Status && !slices.Contains(codes, a.code) {
			codes = append(codes, a.code)
		}
	}
	return chaos.StatusText(k.Op.Status, strings.Join(codes, " or "))
}

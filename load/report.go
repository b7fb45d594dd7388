package load

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"github.com/tsenart/vegeta/v12/lib/plot"
)

// Schema versions the JSON summary; bump on an incompatible change.
const Schema = "idemcheck.load/v1"

// Report is the run summary; its JSON form is the documented schema
// idemcheck.load/v1 (docs/load.md).
type Report struct {
	Schema      string    `json:"schema"`
	Target      string    `json:"target,omitempty"`
	Mode        Mode      `json:"mode,omitempty"`
	Plan        string    `json:"plan,omitempty"`
	HitRatio    float64   `json:"hit_ratio,omitempty"` // configured (mix)
	KeySeed     string    `json:"key_seed,omitempty"`  // hash keys: reproduce with --key-seed
	Started     time.Time `json:"started"`
	DurationS   float64   `json:"duration_s"`
	Interrupted bool      `json:"interrupted"`
	VerySlowMs  float64   `json:"very_slow_ms"`
	// Delayed counts requests vegeta's worker cap sent more than 1 ms
	// behind the rate plan; over 1% of the requests, latency thresholds
	// fail (DelayWarning).
	Delayed uint64 `json:"delayed"`
	// Paths holds one entry per measured path: hit, miss, contention, nokey.
	Paths map[Path]*PathStats `json:"paths"`
	// Ratios compares paths: "hit.p50/miss.p50", "hit.p99/miss.p99",
	// "hit.p50/nokey.p50", ... for the pairs present.
	Ratios map[string]float64 `json:"ratios"`
	// ObservedHitRatio is hit requests over keyed requests (hit+miss).
	ObservedHitRatio float64      `json:"observed_hit_ratio,omitempty"`
	Phases           []PhaseStats `json:"phases"`
	// Violations counts broken guarantees; ViolationList shows the first few.
	Violations    int               `json:"violations"`
	ViolationList []Violation       `json:"violation_list"`
	UncheckedHits uint64            `json:"unchecked_hits,omitempty"`
	Oracle        *OracleReport     `json:"oracle"`
	Thresholds    []ThresholdResult `json:"thresholds"`

	plot *plot.Plot // set when the time plot was collected
}

// PhaseStats is the achieved figures of one plan phase.
type PhaseStats struct {
	Spec      string  `json:"spec"`
	Requests  uint64  `json:"requests"`
	Rate      float64 `json:"achieved_rate"`
	DurationS float64 `json:"duration_s"`
}

// Breached returns the thresholds that did not pass.
func (r *Report) Breached() []ThresholdResult {
	var out []ThresholdResult
	for _, t := range r.Thresholds {
		if !t.OK {
			out = append(out, t)
		}
	}
	return out
}

// ApplyThresholds evaluates ths and records the verdicts in the report.
func (r *Report) ApplyThresholds(ths []Threshold) {
	r.Thresholds = r.Thresholds[:0]
	for _, th := range ths {
		r.Thresholds = append(r.Thresholds, th.Evaluate(r))
	}
}

// phaseCount tracks one phase (one attack name).
type phaseCount struct {
	spec        string
	n           uint64
	first, last time.Time
}

// collector turns a stream of results into a Report. It is fed either by
// a live run or by decoding results files (load report).
type collector struct {
	verySlow time.Duration
	paths    map[Path]*pathMetrics
	check    *checker
	phases   []*phaseCount
	foreign  uint64 // results without an idemcheck tag
}

func newCollector(verySlow time.Duration) *collector {
	return &collector{verySlow: verySlow, paths: map[Path]*pathMetrics{}, check: newChecker()}
}

func (c *collector) add(r *vegeta.Result) {
	p, key, ok := Classify(r)
	if !ok {
		c.foreign++
		return
	}
	c.check.add(r, p, key)
	if p == warmup {
		return
	}
	m := c.paths[p]
	if m == nil {
		m = newPathMetrics()
		c.paths[p] = m
	}
	m.add(r, c.verySlow)
	var ph *phaseCount
	for _, x := range c.phases {
		if x.spec == r.Attack {
			ph = x
		}
	}
	if ph == nil {
		ph = &phaseCount{spec: r.Attack, first: r.Timestamp}
		c.phases = append(c.phases, ph)
	}
	ph.n++
	if r.Timestamp.Before(ph.first) {
		ph.first = r.Timestamp
	}
	if r.Timestamp.After(ph.last) {
		ph.last = r.Timestamp
	}
}

func (c *collector) report() *Report {
	c.check.finish()
	rep := &Report{
		Schema:     Schema,
		VerySlowMs: float64(c.verySlow) / float64(time.Millisecond),
		Paths:      map[Path]*PathStats{},
		Ratios:     map[string]float64{},
		Phases:     []PhaseStats{},
		Thresholds: []ThresholdResult{},
	}
	var first, lastEnd time.Time
	for p, m := range c.paths {
		rep.Paths[p] = m.stats()
		if first.IsZero() || m.first.Before(first) {
			first = m.first
		}
		if m.lastEnd.After(lastEnd) {
			lastEnd = m.lastEnd
		}
	}
	rep.Started = first
	if !first.IsZero() {
		rep.DurationS = lastEnd.Sub(first).Seconds()
	}
	for _, ph := range c.phases {
		ps := PhaseStats{Spec: ph.spec, Requests: ph.n, DurationS: ph.last.Sub(ph.first).Seconds()}
		if ps.DurationS > 0 && ph.n > 1 {
			ps.Rate = float64(ph.n-1) / ps.DurationS
		}
		rep.Phases = append(rep.Phases, ps)
	}
	ratio := func(a, b Path, stat string, get func(Latency) float64) {
		x, y := rep.Paths[a], rep.Paths[b]
		if x == nil || y == nil || x.Requests == 0 || y.Requests == 0 || get(y.LatencyMs) == 0 {
			return
		}
		rep.Ratios[fmt.Sprintf("%s.%s/%s.%s", a, stat, b, stat)] = get(x.LatencyMs) / get(y.LatencyMs)
	}
	for _, pair := range [][2]Path{{Hit, Miss}, {Hit, NoKey}, {Miss, NoKey}, {Contention, NoKey}} {
		ratio(pair[0], pair[1], "p50", func(l Latency) float64 { return l.P50 })
		ratio(pair[0], pair[1], "p99", func(l Latency) float64 { return l.P99 })
	}
	if h, m := rep.Paths[Hit], rep.Paths[Miss]; h != nil && m != nil {
		rep.ObservedHitRatio = float64(h.Requests) / float64(h.Requests+m.Requests)
	}
	rep.Violations = c.check.count
	rep.ViolationList = append([]Violation{}, c.check.examples...)
	rep.UncheckedHits = c.check.unchecked
	return rep
}

// refreshViolations copies checker findings made after report() (the
// oracle runs last) into rep.
func (c *collector) refreshViolations(rep *Report) {
	rep.Violations = c.check.count
	rep.ViolationList = append([]Violation{}, c.check.examples...)
}

// WriteJSON writes the summary as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the console table: paths side by side.
func (r *Report) WriteText(w io.Writer) error {
	var cols []Path
	for _, p := range Paths {
		if r.Paths[p] != nil {
			cols = append(cols, p)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, f func(*PathStats) string) {
		fmt.Fprint(tw, name, "\t")
		for _, p := range cols {
			fmt.Fprint(tw, f(r.Paths[p]), "\t")
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "\t")
	for _, p := range cols {
		fmt.Fprint(tw, p, "\t")
	}
	fmt.Fprintln(tw)
	row("requests", func(s *PathStats) string { return fmt.Sprint(s.Requests) })
	row("achieved rate/s", func(s *PathStats) string { return fmt.Sprintf("%.1f", s.Rate) })
	row("throughput/s", func(s *PathStats) string { return fmt.Sprintf("%.1f", s.Throughput) })
	row("success", func(s *PathStats) string { return fmt.Sprintf("%.2f%%", 100*s.Success) })
	lat := func(name string, get func(Latency) float64) {
		row(name, func(s *PathStats) string { return fmtMs(get(s.LatencyMs)) })
	}
	lat("p50", func(l Latency) float64 { return l.P50 })
	lat("p90", func(l Latency) float64 { return l.P90 })
	lat("p99", func(l Latency) float64 { return l.P99 })
	lat("p99.9", func(l Latency) float64 { return l.P999 })
	lat("max", func(l Latency) float64 { return l.Max })
	row(fmt.Sprintf("very slow (>=%s)", fmtMs(r.VerySlowMs)), func(s *PathStats) string { return fmt.Sprint(s.VerySlow) })
	row("status codes", func(s *PathStats) string {
		var parts []string
		for _, k := range sortedKeys(s.StatusCodes) {
			parts = append(parts, fmt.Sprintf("%s:%d", k, s.StatusCodes[k]))
		}
		return strings.Join(parts, " ")
	})
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, ph := range r.Phases {
		fmt.Fprintf(w, "phase %-24s %8d requests  achieved %.1f/s\n", ph.Spec, ph.Requests, ph.Rate)
	}
	for _, k := range sortedKeys(r.Ratios) {
		fmt.Fprintf(w, "ratio %-24s %.3f\n", k, r.Ratios[k])
	}
	if r.ObservedHitRatio > 0 {
		fmt.Fprintf(w, "observed hit ratio %.3f\n", r.ObservedHitRatio)
	}
	switch {
	case r.Oracle == nil:
		fmt.Fprintln(w, "oracle: not run (merged results carry no oracle counts)")
	case !r.Oracle.Available:
		fmt.Fprintln(w, "oracle: none declared — execution counts unverified; replay equality checked")
	default:
		if r.Oracle.TotalsURL == "" {
			fmt.Fprintf(w, "oracle: no totals URL, %d keys probed", r.Oracle.KeysProbed)
		} else {
			fmt.Fprintf(w, "oracle: %d executions in the window (explained: %d..%d), %d keys probed",
				r.Oracle.After-r.Oracle.Before, r.Oracle.ExpectedMin, r.Oracle.ExpectedMax, r.Oracle.KeysProbed)
		}
		if r.Oracle.Error != "" {
			fmt.Fprintf(w, " — error: %s", r.Oracle.Error)
		}
		fmt.Fprintln(w)
	}
	if r.UncheckedHits > 0 {
		fmt.Fprintf(w, "unchecked hits (no warm-up response for the key): %d\n", r.UncheckedHits)
	}
	fmt.Fprintf(w, "violations: %d\n", r.Violations)
	for _, v := range r.ViolationList {
		if v.Key != "" {
			fmt.Fprintf(w, "  %s key=%s: %s\n", v.Kind, v.Key, v.Detail)
		} else {
			fmt.Fprintf(w, "  %s: %s\n", v.Kind, v.Detail)
		}
	}
	if msg := r.DelayWarning(); msg != "" {
		fmt.Fprintln(w, msg)
	}
	for _, t := range r.Thresholds {
		verdict := "ok"
		if !t.OK {
			verdict = "BREACHED"
		}
		fmt.Fprintf(w, "threshold %-28s %-9s value %s\n", t.Expr, verdict, t.Value)
	}
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: partial report")
	}
	return nil
}

func fmtMs(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2fs", v/1000)
	case v >= 1:
		return fmt.Sprintf("%.2fms", v)
	default:
		return fmt.Sprintf("%.0fµs", v*1000)
	}
}

package load

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Threshold is one k6-style pass condition, e.g. "hit.p99<5ms",
// "hit.p50/miss.p50<0.5", "violations==0", "miss.success>0.99".
type Threshold struct {
	Expr  string
	left  metricRef
	right *metricRef // set for a ratio of two metrics
	op    string
	value float64 // seconds for latencies, a plain number otherwise
}

// metricRef names a number in the report: a path statistic or violations.
type metricRef struct {
	path Path   // empty for run-wide metrics
	stat string // p50, success, violations, ...
}

func (m metricRef) String() string {
	if m.path == "" {
		return m.stat
	}
	return string(m.path) + "." + m.stat
}

// Statistics a threshold may name, per path.
var latencyStats = map[string]bool{"min": true, "mean": true, "p50": true, "p90": true, "p99": true, "p99.9": true, "max": true}
var countStats = map[string]bool{"requests": true, "rate": true, "throughput": true, "success": true, "very_slow": true}

var thresholdRe = regexp.MustCompile(`^\s*([A-Za-z0-9_.]+)\s*(?:/\s*([A-Za-z0-9_.]+)\s*)?(<=|>=|==|!=|<|>)\s*(\S+)\s*$`)

// ParseThreshold reads METRIC OP VALUE, where METRIC is PATH.STAT,
// PATH.STAT/PATH.STAT (a ratio) or violations; OP is < <= > >= == !=;
// VALUE carries a unit for latencies (5ms, 1.5s, 800us) and is plain or a
// percentage otherwise (0.99, 99%).
func ParseThreshold(s string) (Threshold, error) {
	m := thresholdRe.FindStringSubmatch(s)
	if m == nil {
		return Threshold{}, fmt.Errorf("threshold %q: want METRIC OP VALUE, e.g. 'hit.p99<5ms', 'hit.p50/miss.p50<0.5', 'violations==0'", s)
	}
	th := Threshold{Expr: strings.TrimSpace(s), op: m[3]}
	var err error
	if th.left, err = parseMetric(m[1]); err != nil {
		return Threshold{}, fmt.Errorf("threshold %q: %w", s, err)
	}
	if m[2] != "" {
		r, err := parseMetric(m[2])
		if err != nil {
			return Threshold{}, fmt.Errorf("threshold %q: %w", s, err)
		}
		th.right = &r
	}
	if th.value, err = th.parseValue(m[4]); err != nil {
		return Threshold{}, fmt.Errorf("threshold %q: value %q: %w", s, m[4], err)
	}
	return th, nil
}

func parseMetric(s string) (metricRef, error) {
	if s == "violations" {
		return metricRef{stat: s}, nil
	}
	path, stat, ok := strings.Cut(s, ".")
	if !ok {
		return metricRef{}, fmt.Errorf("metric %q: want PATH.STAT (e.g. hit.p99) or violations", s)
	}
	valid := false
	for _, p := range Paths {
		valid = valid || Path(path) == p
	}
	if !valid {
		return metricRef{}, fmt.Errorf("metric %q: path %q is not one of hit, miss, contention, nokey", s, path)
	}
	if !latencyStats[stat] && !countStats[stat] {
		return metricRef{}, fmt.Errorf("metric %q: statistic %q is not one of min mean p50 p90 p99 p99.9 max requests rate throughput success very_slow", s, stat)
	}
	return metricRef{path: Path(path), stat: stat}, nil
}

func (th Threshold) isLatency() bool { return th.right == nil && latencyStats[th.left.stat] }

// readsLatency reports whether a latency figure enters the threshold,
// alone or in a ratio.
func (th Threshold) readsLatency() bool {
	return latencyStats[th.left.stat] || (th.right != nil && latencyStats[th.right.stat])
}

func (th Threshold) parseValue(v string) (float64, error) {
	if th.isLatency() {
		d, err := time.ParseDuration(strings.ReplaceAll(v, "µ", "u"))
		if err != nil {
			return 0, fmt.Errorf("%s is a latency: want a duration with a unit (e.g. 5ms, 1.5s)", th.left)
		}
		return d.Seconds(), nil
	}
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("want a number")
		}
		return f / 100, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a number (no unit: %s is not a latency)", th.left)
	}
	return f, nil
}

// Paths returns the paths the threshold reads, so a front end can reject
// a threshold on a path the mode never sends.
func (th Threshold) Paths() []Path {
	var ps []Path
	if th.left.path != "" {
		ps = append(ps, th.left.path)
	}
	if th.right != nil && th.right.path != "" {
		ps = append(ps, th.right.path)
	}
	return ps
}

// ThresholdResult is a threshold's verdict. A threshold whose metric has
// no data cannot pass: it is reported breached with Value "n/a".
type ThresholdResult struct {
	Expr   string `json:"expr"`
	Value  string `json:"value"`
	OK     bool   `json:"ok"`
	NoData bool   `json:"no_data,omitempty"`
}

// lookup returns the metric in the report's units (seconds for latency).
func lookup(r *Summary, m metricRef) (float64, bool) {
	if m.path == "" {
		return float64(r.Violations), true
	}
	s := r.Paths[m.path]
	if s == nil || s.Requests == 0 {
		return 0, false
	}
	l := s.LatencyMs
	switch m.stat {
	case "min":
		return l.Min / 1000, true
	case "mean":
		return l.Mean / 1000, true
	case "p50":
		return l.P50 / 1000, true
	case "p90":
		return l.P90 / 1000, true
	case "p99":
		return l.P99 / 1000, true
	case "p99.9":
		return l.P999 / 1000, true
	case "max":
		return l.Max / 1000, true
	case "requests":
		return float64(s.Requests), true
	case "rate":
		return s.Rate, true
	case "throughput":
		return s.Throughput, true
	case "success":
		return s.Success, true
	case "very_slow":
		return float64(s.VerySlow), true
	}
	return 0, false
}

// Evaluate judges the threshold against a report. A saturated loader
// makes a slow server look fast when latencies start at the send: past
// the delayed-share limit, no threshold reading a latency passes. Timed
// from the intended send (the paced client), they include the wait.
func (th Threshold) Evaluate(r *Summary) ThresholdResult {
	res := th.evaluate(r)
	if share := r.delayedShare(); share > delayedShareLimit && th.readsLatency() && !res.NoData && r.LatencyFrom != LatencyFromIntended {
		res.OK = false
		res.Value += fmt.Sprintf(" (%.1f%% of requests delayed by the worker cap)", 100*share)
	}
	return res
}

func (th Threshold) evaluate(r *Summary) ThresholdResult {
	res := ThresholdResult{Expr: th.Expr}
	v, ok := lookup(r, th.left)
	if ok && th.right != nil {
		var d float64
		d, ok = lookup(r, *th.right)
		if ok && d == 0 {
			ok = false
		}
		if ok {
			v /= d
		}
	}
	if !ok {
		res.Value, res.NoData = "n/a", true
		return res
	}
	if th.isLatency() {
		res.Value = time.Duration(v * float64(time.Second)).Round(time.Microsecond).String()
	} else {
		res.Value = strconv.FormatFloat(v, 'g', 4, 64)
	}
	switch th.op {
	case "<":
		res.OK = v < th.value
	case "<=":
		res.OK = v <= th.value
	case ">":
		res.OK = v > th.value
	case ">=":
		res.OK = v >= th.value
	case "==":
		res.OK = v == th.value
	case "!=":
		res.OK = v != th.value
	}
	return res
}

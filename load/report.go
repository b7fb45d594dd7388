package load

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Schema versions the JSON summary; bump on an incompatible change.
const Schema = "idemcheck.load/v1"

// Summary is what a load run measured and judged (named apart from the
// conformance run's scenarios.Report); its JSON form is the documented
// schema idemcheck.load/v1 (docs/load.md).
type Summary struct {
	Schema   string  `json:"schema"`
	Target   string  `json:"target,omitempty"`
	Mode     Mode    `json:"mode,omitempty"`
	Plan     string  `json:"plan,omitempty"`
	HitRatio float64 `json:"hit_ratio,omitempty"` // configured (mix)
	KeySeed  string  `json:"key_seed,omitempty"`  // hash keys: reproduce with --key-seed
	// Shard is "I/N" when this run was one shard of N (--shard).
	Shard string `json:"shard,omitempty"`
	// Replicas: the base URLs requests took in turn (--replica, replicas:).
	Replicas []string `json:"replicas,omitempty"`
	// Protocol is what the requests were sent in: HTTP/1.1 or HTTP/2 (as
	// the target answered the preflight), or gRPC; absent in merged
	// reports.
	Protocol string `json:"protocol,omitempty"`
	// LatencyFrom says where each latency starts: LatencyFromIntended
	// (the paced client: every run now; a max@ phase's send is due when a
	// worker takes it), LatencyFromSend in results of older versions;
	// absent in merged reports.
	LatencyFrom string    `json:"latency_from,omitempty"`
	Started     time.Time `json:"started"`
	DurationS   float64   `json:"duration_s"`
	Interrupted bool      `json:"interrupted"`
	VerySlowMs  float64   `json:"very_slow_ms"`
	// TTLS is the key lifetime (seconds) the replay check applied; 0: none.
	// MarginS is the margin before it: answers to requests sent later than
	// TTL − margin after their key's first request are not judged.
	TTLS    float64 `json:"ttl_s,omitempty"`
	MarginS float64 `json:"margin_s,omitempty"`
	// Injected is what the run merged into every request body (a variant,
	// --body-patch) and the delay that asks of each execution; absent
	// when it sent the operation's body as declared, and in merged
	// reports (results files carry no bodies).
	Injected *Injected `json:"injected,omitempty"`
	// ExpectedStatus is the declared status of the variant sent (e.g. 503
	// for transient_error): it counts as an answer, not an error.
	ExpectedStatus int `json:"expected_status,omitempty"`
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
	Violations    int         `json:"violations"`
	ViolationList []Violation `json:"violation_list"`
	UncheckedHits uint64      `json:"unchecked_hits,omitempty"`
	// Judged counts the keyed answers (hit, miss, contention) the checks
	// applied to; NotJudged the others by reason (NotJudgedExpired,
	// NotJudgedNoOriginal). Violations are out of Judged.
	Judged    uint64            `json:"judged"`
	NotJudged map[string]uint64 `json:"not_judged"`
	// AfterTTL counts answers that differed from their key's first (a
	// hit's replay; a miss or contention key's further 2xx body) when the
	// key may have expired: legal fresh executions, not judged.
	AfterTTL uint64 `json:"after_ttl"`
	// Failures are paths that failed outright (CheckHealth): nothing
	// answered as expected, or too many transport errors and unexpected
	// 5xx. Any fails the run whatever the thresholds say.
	Failures      []PathFailure     `json:"failures"`
	MaxErrorShare float64           `json:"max_error_share"`
	Oracle        *OracleReport     `json:"oracle"`
	Thresholds    []ThresholdResult `json:"thresholds"`

	plot *TimePlot // set when the time plot was collected
}

// TimePlot is the latency over time per path, nil unless collected
// (WithTimePlot, or ReadResults with timePlot).
func (r *Summary) TimePlot() *TimePlot { return r.plot }

// PhaseStats is the achieved figures of one plan phase.
type PhaseStats struct {
	Spec      string  `json:"spec"`
	Requests  uint64  `json:"requests"`
	Rate      float64 `json:"achieved_rate"`
	DurationS float64 `json:"duration_s"`
}

// PathFailure says why a path failed outright.
type PathFailure struct {
	Path   Path   `json:"path"`
	Reason string `json:"reason"`
}

// DefaultMaxErrorShare is the share of transport errors and unexpected
// 5xx a path may have before the run fails (--max-error-share).
const DefaultMaxErrorShare = 0.01

// CheckHealth records the paths that failed outright: none of their
// requests got an expected answer (a 2xx, the declared status of the
// variant sent, or any non-5xx answer to a request without a key), or
// more than maxShare of them were transport errors or 5xx the variant
// does not declare. A run that measured only failures proves nothing,
// whatever its thresholds say. An interrupted run is not judged.
func (r *Summary) CheckHealth(maxShare float64) {
	r.MaxErrorShare = maxShare
	r.Failures = []PathFailure{}
	if r.Interrupted {
		return // requests cut short are not judged
	}
	for _, p := range Paths {
		s := r.Paths[p]
		if s == nil || s.Requests == 0 {
			continue
		}
		var ok, bad uint64
		for k, n := range s.StatusCodes {
			code, _ := strconv.Atoi(k)
			switch {
			case code >= 200 && code < 300, code != 0 && code == r.ExpectedStatus, p == NoKey && code > 0 && code < 500:
				ok += n
			}
			if code == 0 || (code >= 500 && code != r.ExpectedStatus) {
				bad += n
			}
		}
		switch share := float64(bad) / float64(s.Requests); {
		case ok == 0:
			r.Failures = append(r.Failures, PathFailure{Path: p, Reason: fmt.Sprintf(
				"none of %d requests got an expected answer (%s)", s.Requests, s.codes())})
		case share > maxShare:
			r.Failures = append(r.Failures, PathFailure{Path: p, Reason: fmt.Sprintf(
				"%.2f%% of %d requests were transport errors or unexpected 5xx (max %.2f%%; %s)",
				100*share, s.Requests, 100*maxShare, s.codes())})
		}
	}
}

// codes lists the answers: by gRPC code name in a gRPC run (OK:346
// ABORTED:154, as ghz does), else by HTTP status.
func (s *PathStats) codes() string {
	if len(s.GRPCCodes) > 0 {
		return "codes " + CodeList(s.GRPCCodes)
	}
	return "status codes " + CodeList(s.StatusCodes)
}

// CodeList is "500:12 0:3", codes in order: how a failure's reason and
// the report's table list the answers.
func CodeList(codes map[string]uint64) string {
	var parts []string
	for _, k := range sortedKeys(codes) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, codes[k]))
	}
	return strings.Join(parts, " ")
}

// Breached returns the thresholds that did not pass.
func (r *Summary) Breached() []ThresholdResult {
	var out []ThresholdResult
	for _, t := range r.Thresholds {
		if !t.OK {
			out = append(out, t)
		}
	}
	return out
}

// ApplyThresholds evaluates ths and records the verdicts in the report.
func (r *Summary) ApplyThresholds(ths []Threshold) {
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

// collector turns a stream of results into a Summary. It is fed either by
// a live run or by decoding results files (load report).
type collector struct {
	verySlow time.Duration
	paths    map[Path]*pathMetrics
	check    *checker
	phases   []*phaseCount
	foreign  uint64 // results without an idemcheck tag
}

// newCollector: ttl is the target's key lifetime (0: forever or
// unknown), margin the profile's margin before it.
func newCollector(verySlow, ttl, margin time.Duration) *collector {
	return &collector{verySlow: verySlow, paths: map[Path]*pathMetrics{}, check: newChecker(ttl, margin)}
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

func (c *collector) report() *Summary {
	c.check.finish()
	rep := &Summary{
		Schema:     Schema,
		VerySlowMs: float64(c.verySlow) / float64(time.Millisecond),
		Paths:      map[Path]*PathStats{},
		Ratios:     map[string]float64{},
		Phases:     []PhaseStats{},
		Thresholds: []ThresholdResult{},
		Failures:   []PathFailure{},
		TTLS:       c.check.ttl.Seconds(),
		MarginS:    c.check.margin.Seconds(),
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
	rep.AfterTTL = c.check.afterTTL
	rep.Judged = c.check.judged
	rep.NotJudged = map[string]uint64{}
	for k, n := range c.check.notJudged {
		rep.NotJudged[k] = n
	}
	return rep
}

// NotJudgedCount is how many keyed answers were not judged.
func (r *Summary) NotJudgedCount() uint64 {
	var n uint64
	for _, c := range r.NotJudged {
		n += c
	}
	return n
}

// MostlyUnjudged reports whether more keyed answers were left unjudged
// than were judged: "0 violations" then says little, and the run exits 5
// unless incomplete evidence is accepted.
func (r *Summary) MostlyUnjudged() bool { return r.NotJudgedCount() > r.Judged }

// refreshViolations copies checker findings made after report() (the
// oracle runs last) into rep.
func (c *collector) refreshViolations(rep *Summary) {
	rep.Violations = c.check.count
	rep.ViolationList = append([]Violation{}, c.check.examples...)
}

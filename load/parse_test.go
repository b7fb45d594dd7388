package load_test

import (
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/load"
)

func TestParsePlan(t *testing.T) {
	cases := []struct {
		plan    string
		phases  int
		total   time.Duration
		err     string // substring naming the bad token; empty = valid
		explain string
	}{
		{"100@10s 1000@30s", 2, 40 * time.Second, "", "steps: one phase per token"},
		{"100->2000@1m", 1, time.Minute, "", "linear ramp"},
		{"sine(1000,500,10s)@60s", 1, time.Minute, "", "sine around a mean"},
		{"max@5s", 1, 5 * time.Second, "", "closed loop, bounded by max workers"},
		{"100/s@2s", 1, 2 * time.Second, "", "a /s suffix is accepted"},
		{"", 0, 0, "empty", "no phases"},
		{"100@10s 1000@zz", 0, 0, `"1000@zz"`, "the bad token is named"},
		{"100", 0, 0, "missing @DURATION", "a rate alone has no length"},
		{"0@1s", 0, 0, "rate", "zero rate is refused (use max for closed loop)"},
		{"fast@1s", 0, 0, `"fast"`, "a rate must be a number"},
		{"100@-1s", 0, 0, "duration", "negative duration"},
		{"100@2h", 0, 0, "duration", "phases are bounded to an hour"},
		{"sine(100,200,1s)@2s", 0, 0, "amplitude", "the sine would reach zero"},
		{"sine(100,20)@2s", 0, 0, "MEAN,AMP,PERIOD", "sine needs three arguments"},
		{"100->0@5s", 0, 0, "rate", "a ramp to zero is refused"},
	}
	for _, tc := range cases {
		p, err := load.ParsePlan(tc.plan)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: ParsePlan(%q) error %v, want it to mention %q", tc.explain, tc.plan, err, tc.err)
			}
			continue
		}
		if err != nil || len(p) != tc.phases || p.Duration() != tc.total || p.String() != strings.Join(strings.Fields(tc.plan), " ") {
			t.Errorf("%s: ParsePlan(%q) = %v phases %d total %s err %v", tc.explain, tc.plan, p, len(p), p.Duration(), err)
		}
	}
}

// TestPlanPacers: each phase shape maps onto the vegeta pacer that paces it.
func TestPlanPacers(t *testing.T) {
	p, err := load.ParsePlan("500@1s 100->300@2s sine(1000,500,10s)@1s max@1s")
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := p[0].Pacer.(vegeta.ConstantPacer); !ok || r.Freq != 500 {
		t.Errorf("constant: %#v", p[0].Pacer)
	}
	if l, ok := p[1].Pacer.(vegeta.LinearPacer); !ok || l.StartAt.Freq != 100 || l.Slope != 100 {
		t.Errorf("ramp 100->300 over 2s wants slope 100/s²: %#v", p[1].Pacer)
	}
	if s, ok := p[2].Pacer.(vegeta.SinePacer); !ok || s.Mean.Freq != 1000 || s.Amp.Freq != 500 || s.Period != 10*time.Second {
		t.Errorf("sine: %#v", p[2].Pacer)
	}
	if !p[3].Max {
		t.Errorf("max phase not marked closed-loop")
	}
}

func TestParseThreshold(t *testing.T) {
	cases := []struct {
		expr    string
		err     string
		explain string
	}{
		{"hit.p99<5ms", "", "latency with a unit"},
		{"miss.p99.9 <= 1.5s", "", "p99.9 and spaces"},
		{"hit.p50/miss.p50<0.5", "", "a ratio is unitless"},
		{"violations==0", "", "run-wide count"},
		{"miss.success>0.99", "", "a ratio of successes"},
		{"miss.success>=99%", "", "a percentage"},
		{"contention.very_slow==0", "", "count of very slow requests"},
		{"hit.p99<5", "latency", "a latency needs a unit"},
		{"hit.p42<5ms", `"p42"`, "unknown statistic named"},
		{"cache.p99<5ms", `"cache"`, "unknown path named"},
		{"p99<5ms", "PATH.STAT", "a path is required"},
		{"hit.p99~5ms", "METRIC OP VALUE", "unknown operator"},
		{"hit.success>lots", "number", "a count needs a number"},
		{"hit.p50/miss.p50<1ms", "number", "a ratio takes no unit"},
	}
	for _, tc := range cases {
		_, err := load.ParseThreshold(tc.expr)
		if tc.err == "" && err != nil {
			t.Errorf("%s: ParseThreshold(%q): %v", tc.explain, tc.expr, err)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: ParseThreshold(%q) error %v, want it to mention %q", tc.explain, tc.expr, err, tc.err)
		}
	}
}

// TestThresholdEvaluate: verdicts against a fixed report, including the
// rule that a threshold without data cannot pass.
func TestThresholdEvaluate(t *testing.T) {
	rep := &load.Summary{Violations: 2, Paths: map[load.Path]*load.PathStats{
		load.Hit:  {Requests: 10, Success: 1, LatencyMs: load.Latency{P50: 0.5, P99: 4}},
		load.Miss: {Requests: 10, Success: 0.9, LatencyMs: load.Latency{P50: 50, P99: 60}},
	}}
	cases := []struct {
		expr    string
		ok      bool
		value   string
		explain string
	}{
		{"hit.p99<5ms", true, "4ms", "4 ms is under 5 ms"},
		{"hit.p99<4ms", false, "4ms", "strictly less"},
		{"hit.p99<=4ms", true, "4ms", "less or equal"},
		{"hit.p50/miss.p50<0.5", true, "0.01", "replay 100x faster"},
		{"miss.success>0.99", false, "0.9", "10% failed"},
		{"violations==0", false, "2", "violations breach"},
		{"contention.p99<1s", false, "n/a", "no contention data cannot pass"},
	}
	for _, tc := range cases {
		th, err := load.ParseThreshold(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		got := th.Evaluate(rep)
		if got.OK != tc.ok || got.Value != tc.value {
			t.Errorf("%s: %s = %+v, want ok=%v value %s", tc.explain, tc.expr, got, tc.ok, tc.value)
		}
	}
}

func TestKeys(t *testing.T) {
	a, b := load.HashKeys("orders"), load.HashKeys("orders")
	if a(1) != b(1) || a(1) == a(2) || load.HashKeys("other")(1) == a(1) {
		t.Error("hash keys: same seed and id must give the same key, anything else a different one")
	}
	r1, r2 := load.RandomKeys(), load.RandomKeys()
	if r1(1) == r2(1) || r1(1) == r1(2) {
		t.Error("random keys must be unique per run and per id")
	}
}

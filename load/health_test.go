package load_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// TestCheckHealth: a path fails outright when nothing answered as
// expected or too many requests were transport errors or unexpected 5xx,
// whatever the thresholds say; one row per rule.
func TestCheckHealth(t *testing.T) {
	path := func(codes map[string]uint64) *load.PathStats {
		s := &load.PathStats{StatusCodes: codes}
		for _, n := range codes {
			s.Requests += n
		}
		return s
	}
	for _, tc := range []struct {
		name, rule string
		p          load.Path
		codes      map[string]uint64
		expect     int // the variant's declared status
		intr       bool
		fails      string // substring of the failure reason; "" none
	}{
		{"healthy", "2xx answers pass", load.Miss, map[string]uint64{"201": 1000}, 0, false, ""},
		{"all 500", "a run whose every answer is a 500 fails", load.Miss, map[string]uint64{"500": 100}, 0, false, "none of 100"},
		{"all transport errors", "a run that never got an answer fails", load.Hit, map[string]uint64{"0": 50}, 0, false, "none of 50"},
		{"2% errors", "more than 1% transport errors or 5xx fail", load.Miss, map[string]uint64{"201": 98, "502": 1, "0": 1}, 0, false, "2.00% of 100"},
		{"1% errors", "up to the share is tolerated", load.Miss, map[string]uint64{"201": 99, "503": 1}, 0, false, ""},
		{"contention 409s", "409s under contention are answers, not errors", load.Contention, map[string]uint64{"201": 4, "409": 996}, 0, false, ""},
		{"declared 503", "the transient_error variant's declared 503 is expected", load.Miss, map[string]uint64{"503": 100}, 503, false, ""},
		{"declared 402", "the business_error variant's declared 402 is an answer", load.Miss, map[string]uint64{"402": 100}, 402, false, ""},
		{"nokey 400", "a server that requires the key answers 400 to the nokey baseline", load.NoKey, map[string]uint64{"400": 100}, 0, false, ""},
		{"all 401", "every request refused (wrong credentials) proves nothing", load.Miss, map[string]uint64{"401": 100}, 0, false, "none of 100"},
		{"interrupted", "an interrupted run is not judged", load.Miss, map[string]uint64{"0": 100}, 0, true, ""},
	} {
		rep := &load.Summary{Paths: map[load.Path]*load.PathStats{tc.p: path(tc.codes)}, ExpectedStatus: tc.expect, Interrupted: tc.intr}
		rep.CheckHealth(load.DefaultMaxErrorShare)
		got := ""
		for _, f := range rep.Failures {
			got += string(f.Path) + ": " + f.Reason
		}
		if (tc.fails == "") != (got == "") || !strings.Contains(got, tc.fails) {
			t.Errorf("%s: rule: %s: failures %q, want %q", tc.name, tc.rule, got, tc.fails)
		}
	}
}

// TestHitAfterTTL: a hit run longer than the keys' TTL against a correct
// server: the replays after expiry execute anew, legally. With the TTL the
// run is clean and counts them; without it they are replay-differs (what
// a 10 s hit run against 5 s keys reported: 2,551 false violations).
func TestHitAfterTTL(t *testing.T) {
	tg := startDemo(t, demo.Options{TTL: 500 * time.Millisecond})
	for _, ttl := range []time.Duration{500 * time.Millisecond, 0} {
		rep, err := load.Run(t.Context(), tg, load.WithMode(load.ModeHit), load.WithPool(5),
			load.WithPlan(plan(t, "100@1500ms")), load.WithTTL(ttl), load.WithWorkers(4, 16))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ttl > 0 && (rep.Violations != 0 || rep.AfterTTL == 0):
			t.Errorf("ttl %s: %d violations %v, %d after TTL; want none and some", ttl, rep.Violations, rep.ViolationList, rep.AfterTTL)
		case ttl == 0 && rep.Violations == 0:
			t.Errorf("without the TTL the fresh executions are replay-differs; got none")
		}
	}
}

package chaos_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/chaos"
)

func intp(n int) *int { return &n }

// Each rule of the checker, on a hand-written history: what it must flag
// and what it must let pass.
func TestChecker(t *testing.T) {
	ok := func(id string) chaos.Upstream { return chaos.Upstream{Status: 201, ID: id} }
	attempt := func(n int, body string, up ...chaos.Upstream) chaos.Event {
		return chaos.Event{Type: "attempt", Key: "k", Attempt: n, RequestSHA256: body, Upstream: up}
	}
	// dropped: the upstream answered, drop-response closed the client's
	// connection.
	dropped := func(n int, up chaos.Upstream) chaos.Event {
		ev := attempt(n, "a", up)
		ev.Fault, ev.Client = "drop-response", chaos.ClientUnknown
		return ev
	}
	cases := []struct {
		name, explanation string
		attempts          []chaos.Event
		op                *chaos.Op
		rule              string // "" = clean
	}{
		{"replayed after drop", "one id committed, replayed to the retry, oracle 1",
			[]chaos.Event{attempt(1, "a", ok("x")), attempt(2, "a", ok("x"))},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientOK, Status: 201, ID: "x", Oracle: intp(1)}, ""},
		{"re-executed", "two ids under one key",
			[]chaos.Event{attempt(1, "a", ok("x")), attempt(2, "a", ok("y"))}, nil, chaos.RuleDoubleExecution},
		{"oracle counts two", "ids agree but the oracle counts 2 executions",
			[]chaos.Event{attempt(1, "a", ok("x"))},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientOK, ID: "x", Oracle: intp(2)}, chaos.RuleDoubleExecution},
		{"changed body replayed", "a different body got a 2xx under the same key",
			[]chaos.Event{attempt(1, "a", ok("x")), attempt(2, "b", ok("x"))}, nil, chaos.RuleFingerprintIgnored},
		{"changed body rejected", "a different body got 422: fine",
			[]chaos.Event{attempt(1, "a", ok("x")), attempt(2, "b", chaos.Upstream{Status: 422})},
			&chaos.Op{Key: "k", Kind: chaos.KindMutated, Outcome: chaos.ClientFail, Status: 422, Oracle: intp(1)}, ""},
		{"lost", "committed upstream (its answer dropped), then the server answered the retries 409: the client never learned it",
			[]chaos.Event{dropped(1, ok("x")), attempt(2, "a", chaos.Upstream{Status: 409}), attempt(3, "a", chaos.Upstream{Status: 409})},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientUnknown, Status: 409, Oracle: intp(1)}, chaos.RuleLost},
		{"every answer dropped", "the server replayed x to every attempt, the harness dropped each answer: not the server's doing",
			[]chaos.Event{dropped(1, ok("x")), dropped(2, ok("x")), dropped(3, ok("x"))},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientUnknown, Oracle: intp(1)}, ""},
		{"business answer made up", "the harness answered the last attempt 400 itself: not the server's answer",
			[]chaos.Event{attempt(1, "a", chaos.Upstream{Status: 402}), {Type: "attempt", Key: "k", Attempt: 2, Fault: "status", Client: chaos.ClientFail, Status: 400}},
			&chaos.Op{Key: "k", Kind: chaos.KindBusiness, Outcome: chaos.ClientFail, Status: 400, Oracle: intp(1)}, ""},
		{"wrong answer", "the client ended with another id than the committed one",
			[]chaos.Event{attempt(1, "a", ok("x"))},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientOK, ID: "y"}, chaos.RuleDoubleExecution},
		{"business error replayed", "402 then 402",
			[]chaos.Event{attempt(1, "a", chaos.Upstream{Status: 402}), attempt(2, "a", chaos.Upstream{Status: 402})},
			&chaos.Op{Key: "k", Kind: chaos.KindBusiness, Outcome: chaos.ClientFail, Status: 402, Oracle: intp(1)}, ""},
		{"business error lost", "the client ended with a different final status",
			[]chaos.Event{attempt(1, "a", chaos.Upstream{Status: 402})},
			&chaos.Op{Key: "k", Kind: chaos.KindBusiness, Outcome: chaos.ClientFail, Status: 400, Oracle: intp(1)}, chaos.RuleWrongAnswer},
		{"5xx re-executed", "three 503s, three executions",
			[]chaos.Event{attempt(1, "a", chaos.Upstream{Status: 503}), attempt(2, "a", chaos.Upstream{Status: 503}), attempt(3, "a", chaos.Upstream{Status: 503})},
			&chaos.Op{Key: "k", Kind: chaos.KindTransient, Outcome: chaos.ClientFail, Status: 503, Oracle: intp(3)}, ""},
		{"5xx replayed", "three 503s, one execution",
			[]chaos.Event{attempt(1, "a", chaos.Upstream{Status: 503}), attempt(2, "a", chaos.Upstream{Status: 503}), attempt(3, "a", chaos.Upstream{Status: 503})},
			&chaos.Op{Key: "k", Kind: chaos.KindTransient, Outcome: chaos.ClientFail, Status: 503, Oracle: intp(1)}, chaos.RuleErrorReplayed},
		{"5xx replayed, same body", "three byte-equal 503s, one execution: the second and third repeat the first",
			[]chaos.Event{attempt(1, "a", chaos.Upstream{Status: 503, SHA256: "e1"}), attempt(2, "a", chaos.Upstream{Status: 503, SHA256: "e1"}), attempt(3, "a", chaos.Upstream{Status: 503, SHA256: "e1"})},
			&chaos.Op{Key: "k", Kind: chaos.KindTransient, Outcome: chaos.ClientFail, Status: 503, Oracle: intp(1)}, chaos.RuleErrorReplayed},
		{"5xx from a store outage", "the handler's 503 once, then two different 503s (the store was down): nothing shows a replay",
			[]chaos.Event{attempt(1, "a", chaos.Upstream{Status: 503, SHA256: "handler"}), attempt(2, "a", chaos.Upstream{Status: 503, SHA256: "outage"}), attempt(3, "a", chaos.Upstream{Status: 503, SHA256: "outage"})},
			&chaos.Op{Key: "k", Kind: chaos.KindTransient, Outcome: chaos.ClientFail, Status: 503, Oracle: intp(1)}, ""},
		{"5xx and no execution", "503s while the handler never ran (oracle 0): nothing existed to replay",
			[]chaos.Event{attempt(1, "a", chaos.Upstream{Status: 503, SHA256: "outage"}), attempt(2, "a", chaos.Upstream{Status: 503, SHA256: "outage"})},
			&chaos.Op{Key: "k", Kind: chaos.KindTransient, Outcome: chaos.ClientFail, Status: 503, Oracle: intp(0)}, ""},
	}
	for _, tc := range cases {
		c := chaos.NewChecker()
		for _, ev := range tc.attempts {
			c.Attempt(ev)
		}
		if tc.op != nil {
			c.Op(*tc.op)
		}
		rep := c.Report()
		var rules []string
		for _, v := range rep.Violations {
			rules = append(rules, v.Rule)
		}
		switch {
		case tc.rule == "" && len(rules) > 0:
			t.Errorf("%s (%s): violations %v, want none", tc.name, tc.explanation, rep.Violations)
		case tc.rule != "" && !strings.Contains(strings.Join(rules, ","), tc.rule):
			t.Errorf("%s (%s): rules %v, want %s", tc.name, tc.explanation, rules, tc.rule)
		}
	}
}

// TestCheckerTTL: with the target's TTL, a second execution that may have
// come after the first record expired is legal (shown in AfterTTL); one
// that certainly overlapped the first record's life is still a violation.
// Without a TTL both are violations, as before.
func TestCheckerTTL(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int, dur time.Duration, body string, up ...chaos.Upstream) chaos.Event {
		return chaos.Event{Type: "attempt", Key: "k", Time: t0.Add(time.Duration(ms) * time.Millisecond), DurationNS: dur.Nanoseconds(),
			RequestSHA256: body, Upstream: up}
	}
	ok := func(id string) chaos.Upstream { return chaos.Upstream{Status: 201, ID: id} }
	conflict := chaos.Upstream{Status: 409}
	cases := []struct {
		name, explanation string
		ttl               time.Duration
		attempts          []chaos.Event
		op                *chaos.Op
		violation, legal  string // rules expected in Violations / AfterTTL ("" none)
	}{
		{"retry after expiry", "serve --ttl 2s, the response dropped, 409s, a retry at 2.5s executes fresh: legal",
			2 * time.Second, []chaos.Event{at(0, 1500*time.Millisecond, "a", ok("x")), at(400, time.Millisecond, "a", conflict),
				at(2500, 1500*time.Millisecond, "a", ok("y"))},
			&chaos.Op{Key: "k", Kind: chaos.KindStorm, Outcome: chaos.ClientOK, Status: 201, ID: "y", Oracle: intp(2)},
			"", chaos.RuleDoubleExecution},
		{"same retry, no TTL", "without the TTL the checker cannot know the key expired",
			0, []chaos.Event{at(0, 1500*time.Millisecond, "a", ok("x")), at(2500, 1500*time.Millisecond, "a", ok("y"))},
			nil, chaos.RuleDoubleExecution, ""},
		{"double execution inside the TTL", "both executions ended before the key could expire",
			2 * time.Second, []chaos.Event{at(0, 100*time.Millisecond, "a", ok("x")), at(50, 100*time.Millisecond, "a", ok("y"))},
			nil, chaos.RuleDoubleExecution, ""},
		{"changed body after expiry", "a mutated retry after the key may have expired executes: legal",
			time.Second, []chaos.Event{at(0, 10*time.Millisecond, "a", ok("x")), at(1500, 10*time.Millisecond, "b", ok("y"))},
			nil, "", chaos.RuleDoubleExecution + "," + chaos.RuleFingerprintIgnored},
		{"oracle two, attempts span the TTL", "the oracle says 2 but the attempts span more than the TTL: legal",
			time.Second, []chaos.Event{at(0, 10*time.Millisecond, "a", ok("x")), at(1500, 10*time.Millisecond, "a", ok("x"))},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientOK, Status: 201, ID: "x", Oracle: intp(2)},
			"", chaos.RuleDoubleExecution},
		{"oracle two within the TTL", "the oracle says 2 and every attempt fits in the TTL: a violation",
			time.Second, []chaos.Event{at(0, 10*time.Millisecond, "a", ok("x")), at(100, 10*time.Millisecond, "a", ok("x"))},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientOK, Status: 201, ID: "x", Oracle: intp(2)},
			chaos.RuleDoubleExecution, ""},
		{"interrupted op", "an op cut short by SIGINT is not lost: the client never got to its answer",
			0, []chaos.Event{at(0, 10*time.Millisecond, "a", ok("x"))},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientInterrupted, Error: "cut short: context canceled"}, "", ""},
	}
	rules := func(vs []chaos.KeyViolation) string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Rule)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range cases {
		c := chaos.NewChecker()
		c.TTL = tc.ttl
		for _, ev := range tc.attempts {
			c.Attempt(ev)
		}
		if tc.op != nil {
			c.Op(*tc.op)
		}
		rep := c.Report()
		if got := rules(rep.Violations); got != tc.violation {
			t.Errorf("%s (%s): violations %q, want %q: %+v", tc.name, tc.explanation, got, tc.violation, rep.Violations)
		}
		if got := rules(rep.AfterTTL); got != tc.legal {
			t.Errorf("%s (%s): after TTL %q, want %q", tc.name, tc.explanation, got, tc.legal)
		}
	}
}

// TestReadHistory: what a history must hold to be judged; one row per rule.
func TestReadHistory(t *testing.T) {
	attempt := `{"type":"attempt","key":"k","attempt":1,"upstream":[{"status":201,"id":"x"}]}`
	for _, tc := range []struct {
		name, rule, history string
		skipTorn            bool
		err, torn           string // substrings; "" none
		ttl                 time.Duration
	}{
		{"empty", "an empty history judges nothing: an error, not OK", "", false, "empty history", "", 0},
		{"run line only", "a header alone judges nothing either", `{"type":"run","ttl_ns":2000000000}` + "\n", false, "empty history", "", 2 * time.Second},
		{"torn tail", "a last line cut mid-write is an error naming the flag", attempt + "\n" + `{"type":"att`, false, "--skip-torn-tail", "", 0},
		{"torn tail skipped", "with the flag it is skipped and reported", attempt + "\n" + `{"type":"att`, true, "", "line 2", 0},
		{"torn middle", "a bad line followed by more is corruption, flag or not", `{"type":"att` + "\n" + attempt + "\n", true, "line 1", "", 0},
		{"run line sets the TTL", "chaos writes the target's TTL so analyze judges the same", `{"type":"run","ttl_ns":2000000000}` + "\n" + attempt + "\n", false, "", "", 2 * time.Second},
		{"unknown type", "an unknown line type is named", `{"type":"nope"}` + "\n", false, `unknown type "nope"`, "", 0},
	} {
		c := chaos.NewChecker()
		torn, err := chaos.ReadHistory(strings.NewReader(tc.history), c, tc.skipTorn)
		switch {
		case tc.err == "" && err != nil, tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: rule: %s: error %v, want %q", tc.name, tc.rule, err, tc.err)
		case !strings.Contains(torn, tc.torn) || (tc.torn == "") != (torn == ""):
			t.Errorf("%s: rule: %s: torn %q, want %q", tc.name, tc.rule, torn, tc.torn)
		case c.TTL != tc.ttl:
			t.Errorf("%s: rule: %s: TTL %s, want %s", tc.name, tc.rule, c.TTL, tc.ttl)
		}
	}
}

// TestCheckerExercised: a run is exercised when some key shows an
// execution; operations that all ended without one (refused bodies) make
// "no violations" empty, and the report says so.
func TestCheckerExercised(t *testing.T) {
	refused := chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientFail, Status: 422, Oracle: intp(0)}
	cases := []struct {
		name, explanation string
		attempt           *chaos.Event
		op                *chaos.Op
		want              bool
	}{
		{"refused", "a 4xx with no id and an oracle at 0 executed nothing", nil, &refused, false},
		{"answered", "a 2xx answer is an execution",
			nil, &chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientOK, Status: 201, ID: "x"}, true},
		{"lost answer", "every answer dropped, but the proxy saw the upstream create an id",
			&chaos.Event{Type: "attempt", Key: "k", Attempt: 1, Upstream: []chaos.Upstream{{Status: 201, ID: "x"}}},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientUnknown}, true},
		{"oracle", "no answer and no id, but the effects oracle counted one",
			nil, &chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientUnknown, Oracle: intp(1)}, true},
		{"proxy history", "a history without operations (proxy --history) is judged on upstream evidence alone",
			&chaos.Event{Type: "attempt", Key: "k", Attempt: 1, Upstream: []chaos.Upstream{{Status: 422}}}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := chaos.NewChecker()
			if tc.attempt != nil {
				c.Attempt(*tc.attempt)
			}
			if tc.op != nil {
				c.Op(*tc.op)
			}
			if r := c.Report(); r.Exercised != tc.want {
				t.Errorf("%s: exercised %v, want %v (executed keys %d)", tc.explanation, r.Exercised, tc.want, r.Executed)
			}
		})
	}
}

// TestCheckerUnjudged: 5xx answers from two sources (the handler's error,
// then a store outage's 503) beyond the executions are not a violation but
// are shown as not judged, with their evidence.
func TestCheckerUnjudged(t *testing.T) {
	c := chaos.NewChecker()
	for i, body := range []string{"handler", "outage", "outage"} {
		c.Attempt(chaos.Event{Type: "attempt", Key: "k", Attempt: i + 1, Upstream: []chaos.Upstream{{Status: 503, SHA256: body}}})
	}
	c.Op(chaos.Op{Key: "k", Kind: chaos.KindTransient, Outcome: chaos.ClientFail, Status: 503, Oracle: intp(1)})
	r := c.Report()
	if len(r.Violations) != 0 || len(r.Unjudged) != 1 || r.Unjudged[0].Rule != chaos.RuleErrorReplayed || !strings.Contains(r.Unjudged[0].Detail, "2 different bodies") {
		t.Fatalf("violations %v, unjudged %v: want none, and one error-replayed not judged", r.Violations, r.Unjudged)
	}
}

// TestCheckerSentTime: one time rule (expiry.SentInside): an execution
// from an attempt sent inside TTL − margin of the key's first contact is
// judged however late it was answered; one sent later is legal.
func TestCheckerSentTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int, dur time.Duration, up chaos.Upstream) chaos.Event {
		return chaos.Event{Type: "attempt", Key: "k", Time: t0.Add(time.Duration(ms) * time.Millisecond), DurationNS: dur.Nanoseconds(),
			RequestSHA256: "a", Upstream: []chaos.Upstream{up}}
	}
	ok := func(id string) chaos.Upstream { return chaos.Upstream{Status: 201, ID: id} }
	for _, tc := range []struct {
		name, explanation string
		attempts          []chaos.Event
		op                *chaos.Op
		violation, legal  string
	}{
		{"slow re-execution", "sent at +0.5s (inside 2s − 0.5s), it ran the slow handler again and answered at +2.5s: a violation",
			[]chaos.Event{at(0, 1500*time.Millisecond, ok("x")), at(500, 2*time.Second, ok("y"))}, nil, chaos.RuleDoubleExecution, ""},
		{"sent inside the margin", "sent at +1.7s, past TTL − margin: the key may have expired by the time it arrived",
			[]chaos.Event{at(0, 10*time.Millisecond, ok("x")), at(1700, 10*time.Millisecond, ok("y"))}, nil, "", chaos.RuleDoubleExecution},
		{"forward held by a delay fault", "received at +0.1s but forwarded at +1.7s (delay before=1.6s): sent past TTL − margin",
			[]chaos.Event{at(0, 10*time.Millisecond, ok("x")), at(100, 1700*time.Millisecond, chaos.Upstream{Status: 201, ID: "y", SentNS: int64(1600 * time.Millisecond)})},
			nil, "", chaos.RuleDoubleExecution},
		{"oracle two, last sent inside", "the oracle counts 2, every attempt sent by +1.4s: a violation",
			[]chaos.Event{at(0, 10*time.Millisecond, ok("x")), at(1400, 900*time.Millisecond, ok("x"))},
			&chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientOK, Status: 201, ID: "x", Oracle: intp(2)}, chaos.RuleDoubleExecution, ""},
	} {
		c := chaos.NewChecker()
		c.TTL, c.Margin = 2*time.Second, 500*time.Millisecond
		for _, ev := range tc.attempts {
			c.Attempt(ev)
		}
		if tc.op != nil {
			c.Op(*tc.op)
		}
		rep := c.Report()
		rules := func(vs []chaos.KeyViolation) string {
			var out []string
			for _, v := range vs {
				out = append(out, v.Rule)
			}
			return strings.Join(out, ",")
		}
		if got := rules(rep.Violations); got != tc.violation {
			t.Errorf("%s (%s): violations %q, want %q: %+v", tc.name, tc.explanation, got, tc.violation, rep.Violations)
		}
		if got := rules(rep.AfterTTL); got != tc.legal {
			t.Errorf("%s (%s): after TTL %q, want %q: %+v", tc.name, tc.explanation, got, tc.legal, rep.AfterTTL)
		}
	}
}

// TestCheckerHarnessCut: keys whose answers the harness dropped are shown
// as not judged with the reason and counted apart; a report where they
// are the majority is mostly unjudged.
func TestCheckerHarnessCut(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(key string, n, ms int, fault string, up chaos.Upstream) chaos.Event {
		e := chaos.Event{Type: "attempt", Key: key, Attempt: n, Time: t0.Add(time.Duration(ms) * time.Millisecond), DurationNS: int64(time.Millisecond),
			RequestSHA256: "a", Fault: fault, Client: chaos.ClientOK, Status: up.Status, Upstream: []chaos.Upstream{up}}
		if fault != "" {
			e.Client = chaos.ClientUnknown
		}
		return e
	}
	ok := chaos.Upstream{Status: 201, ID: "x"}
	c := chaos.NewChecker()
	// dropped: every answer dropped. inflight: the server's 409 came
	// before the commit, every later answer dropped. judged: answered.
	c.Attempt(ev("dropped", 1, 0, "drop-response", ok))
	c.Attempt(ev("dropped", 2, 10, "reset-midbody", ok))
	c.Op(chaos.Op{Key: "dropped", Kind: chaos.KindNormal, Outcome: chaos.ClientUnknown, Oracle: intp(1)})
	c.Attempt(ev("inflight", 1, 0, "drop-response", chaos.Upstream{Status: 201, ID: "y"}))
	c.Attempt(chaos.Event{Type: "attempt", Key: "inflight", Attempt: 2, Time: t0.Add(-time.Millisecond), DurationNS: int64(time.Millisecond),
		Client: chaos.ClientOK, Status: 409, Upstream: []chaos.Upstream{{Status: 409}}})
	c.Attempt(ev("inflight", 3, 50, "drop-response", chaos.Upstream{Status: 201, ID: "y"}))
	c.Op(chaos.Op{Key: "inflight", Kind: chaos.KindStorm, Outcome: chaos.ClientUnknown, Oracle: intp(1)})
	c.Attempt(ev("judged", 1, 0, "", chaos.Upstream{Status: 201, ID: "z"}))
	c.Op(chaos.Op{Key: "judged", Kind: chaos.KindNormal, Outcome: chaos.ClientOK, Status: 201, ID: "z", Oracle: intp(1)})
	r := c.Report()
	if len(r.Violations) != 0 {
		t.Fatalf("violations %+v, want none: the harness dropped the answers", r.Violations)
	}
	want := map[string]int{chaos.NotJudgedHarness: 1, chaos.NotJudgedAfterCommit: 1}
	if r.Judged != 1 || len(r.NotJudged) != 2 || r.NotJudged[chaos.NotJudgedHarness] != 1 || r.NotJudged[chaos.NotJudgedAfterCommit] != 1 {
		t.Errorf("judged %d, not judged %v; want 1 and %v", r.Judged, r.NotJudged, want)
	}
	if len(r.Unjudged) != 2 || !strings.Contains(r.Unjudged[0].Detail, "not judged: the harness dropped every answer (drop-response×1, reset-midbody×1)") {
		t.Errorf("unjudged %+v: want both keys, the first naming the faults", r.Unjudged)
	}
	if !r.MostlyUnjudged() {
		t.Errorf("2 of 3 keys not judged: want MostlyUnjudged")
	}
}

// TestCheckerReplicaKills: in a run that SIGKILLs replicas, an upstream
// exchange that failed (the replica died under it) is the harness's doing:
// a key whose answers were dropped or lost that way is not judged lost;
// without kills the same failure is the server's.
func TestCheckerReplicaKills(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, kills := range []bool{true, false} {
		c := chaos.NewChecker()
		c.ReplicaKills = kills
		c.Attempt(chaos.Event{Type: "attempt", Key: "k", Attempt: 1, Time: t0, DurationNS: int64(time.Millisecond), Fault: "drop-response",
			Client: chaos.ClientUnknown, Upstream: []chaos.Upstream{{Status: 201, ID: "x"}}})
		c.Attempt(chaos.Event{Type: "attempt", Key: "k", Attempt: 2, Time: t0.Add(10 * time.Millisecond), DurationNS: int64(time.Millisecond),
			Client: chaos.ClientUnknown, Status: 502, Upstream: []chaos.Upstream{{Error: "connection refused"}}})
		c.Op(chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientUnknown, Status: 502})
		r := c.Report()
		lost := len(r.Violations) == 1 && r.Violations[0].Rule == chaos.RuleLost
		if lost == kills {
			t.Errorf("replica kills %v: violations %+v, unjudged %+v; want lost only without kills", kills, r.Violations, r.Unjudged)
		}
	}
}

package load

import (
	"crypto/sha256"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/internal/expiry"
)

// Violation is one broken idempotency guarantee seen under load.
type Violation struct {
	Kind   string `json:"kind"`
	Key    string `json:"key,omitempty"`
	Detail string `json:"detail"`
}

// Violation kinds.
const (
	// A replay of a completed key did not repeat its original status and body.
	ReplayDiffers = "replay-differs"
	// One key produced two executions (two created ids, or two 2xx
	// bodies that are not the same replay): the handler ran twice.
	SecondExecution = "second-execution"
	// The oracle counted more (or fewer) executions for a key than one.
	OracleKey = "oracle-key-executions"
	// The oracle's total moved by more than the keys sent can explain.
	OracleTotal = "oracle-total-executions"
)

// maxViolationExamples bounds the listed violations; all are counted.
const maxViolationExamples = 20

// original is a pool key's warm-up response.
type original struct {
	code uint16
	sum  string // bodySum: of the replay form
	id   string // created id, with an id_pointer
	// evidence quotes the body's start for a replay-differs report.
	evidence string
	// start is when the warm-up request was sent: no record of the key is
	// older, so none expires before start+TTL. lastSent is the latest
	// send of a request on the key.
	start, lastSent time.Time
}

// keyOutcome is what the responses for one non-pool key showed.
type keyOutcome struct {
	// exec identifies the first execution seen (execution), execSent is
	// the earliest send of a request answered with it.
	exec      string
	execSent  time.Time
	others    map[string]time.Time // further executions: earliest send of each
	example   string               // the start of one of those bodies, quoted
	executed  bool                 // some response was 2xx
	uncertain bool                 // some response was 5xx, 409 or a transport error
	// first and lastSent bound the key's requests: the earliest and the
	// latest send.
	first, lastSent time.Time
}

// checker verifies responses as they stream by; it needs no oracle, so a
// merged results file is re-checked by `load report` the same way. It
// compares bodies by the sums of their replay forms (bodySum), tells
// executions apart by created ids where an id_pointer is configured, and
// keeps only a clipped quote of each body it may have to show.
type checker struct {
	// ttl is the target's key lifetime (0: forever or unknown), margin
	// the profile's margin before it: an answer to a request sent later
	// than TTL − margin after its key's first request may legally be a
	// fresh execution, and is not judged (expiry.SentInside).
	ttl, margin time.Duration
	originals   map[string]*original
	keys        map[string]*keyOutcome
	nokeyRan    uint64 // nokey 2xx: each is an execution
	nokeyMaybe  uint64 // nokey 5xx/errors: may or may not have executed
	count       int
	examples    []Violation
	unchecked   uint64 // hits whose key had no usable warm-up response
	afterTTL    uint64 // differing replays / executions after the key may have expired
	// judged counts keyed answers the rules applied to; notJudged the
	// others, by reason.
	judged    uint64
	notJudged map[string]uint64
	finished  bool
}

// Reasons an answer is not judged (Summary.NotJudged).
const (
	NotJudgedExpired    = "sent after its key may have expired"
	NotJudgedNoOriginal = "no warm-up response for the key"
)

func newChecker(ttl, margin time.Duration) *checker {
	return &checker{ttl: ttl, margin: margin, originals: map[string]*original{}, keys: map[string]*keyOutcome{}, notJudged: map[string]uint64{}}
}

// inside reports whether a request sent at sent, on a key first sent at
// first, met the key's first record: the rule every face shares.
func (c *checker) inside(first, sent time.Time) bool {
	return expiry.SentInside(first, sent, c.ttl, c.margin)
}

// spansTTL reports whether a key's requests may straddle its expiry, so
// that it may legally have executed more than once.
func (c *checker) spansTTL(first, lastSent time.Time) bool {
	return !c.inside(first, lastSent)
}

func (c *checker) violate(v Violation) {
	c.count++
	if len(c.examples) < maxViolationExamples {
		c.examples = append(c.examples, v)
	}
}

// uncertain statuses: the request may or may not have executed, or the
// server was overloaded; they are errors, not wrong answers.
func uncertain(code uint16) bool { return code == 0 || code == 409 || code == 429 || code >= 500 }

// execution identifies the execution a 2xx answer reports: its created
// id with an id_pointer, else its replay form's sum ("" under
// replay_compare status without an id_pointer: bodies then say nothing
// about executions, as in `run`, and the oracle decides).
func execution(r *vegeta.Result) string {
	if id := createdID(r); id != "" {
		return "id " + id
	}
	if sum := bodySum(r); sum != statusOnlySum {
		return sum
	}
	return ""
}

// statusOnlySum is the sum of the empty replay form (replay_compare
// status).
var statusOnlySum = func() string {
	sum := sha256.Sum256(nil)
	return formatSum(sum[:], 0)
}()

func (c *checker) add(r *vegeta.Result, p Path, key string) {
	switch p {
	case warmup:
		if r.Code >= 200 && r.Code < 300 {
			c.originals[key] = &original{code: r.Code, sum: bodySum(r), id: createdID(r), evidence: clip(r.Body), start: r.Timestamp, lastSent: r.Timestamp}
		}
	case Hit:
		orig, ok := c.originals[key]
		if !ok {
			c.unchecked++
			c.notJudged[NotJudgedNoOriginal]++
			return
		}
		if r.Timestamp.After(orig.lastSent) {
			orig.lastSent = r.Timestamp
		}
		if !c.inside(orig.start, r.Timestamp) {
			c.notJudged[NotJudgedExpired]++
			if r.Code != orig.code || bodySum(r) != orig.sum {
				c.afterTTL++ // the key may have expired: a fresh execution is legal
			}
			return
		}
		c.judged++
		if r.Code == 0 || r.Code == 429 || r.Code >= 500 {
			return // an error, counted in the path's success ratio
		}
		if id := createdID(r); id != "" && orig.id != "" && id != orig.id {
			c.violate(Violation{Kind: SecondExecution, Key: key,
				Detail: fmt.Sprintf("replay created id %q, the original %q: the handler ran again (%d %s)", id, orig.id, r.Code, clip(r.Body))})
			return
		}
		if r.Code != orig.code || bodySum(r) != orig.sum {
			got := clip(r.Body)
			if got == orig.evidence && r.Code == orig.code {
				got += " (differing past the quoted start)"
			}
			c.violate(Violation{Kind: ReplayDiffers, Key: key,
				Detail: fmt.Sprintf("replay got %d %s, original was %d %s", r.Code, got, orig.code, orig.evidence)})
		}
	case Miss, Contention:
		o := c.keys[key]
		if o == nil {
			o = &keyOutcome{first: r.Timestamp}
			c.keys[key] = o
		}
		if r.Timestamp.Before(o.first) {
			o.first = r.Timestamp
		}
		if r.Timestamp.After(o.lastSent) {
			o.lastSent = r.Timestamp
		}
		// Counted against the earliest send seen so far; the verdicts
		// below are taken at finish, against the key's first request.
		if c.inside(o.first, r.Timestamp) {
			c.judged++
		} else {
			c.notJudged[NotJudgedExpired]++
		}
		switch {
		case r.Code >= 200 && r.Code < 300:
			h := execution(r)
			switch {
			case !o.executed:
				o.executed, o.exec, o.execSent = true, h, r.Timestamp
			case h == "":
				// replay_compare status, no id_pointer: nothing to tell
			case h == o.exec:
				if r.Timestamp.Before(o.execSent) {
					o.execSent = r.Timestamp
				}
			default:
				if o.others == nil {
					o.others, o.example = map[string]time.Time{}, clip(r.Body)
				}
				if old, seen := o.others[h]; !seen || r.Timestamp.Before(old) {
					o.others[h] = r.Timestamp
				}
			}
		case uncertain(r.Code):
			o.uncertain = true
		}
	case NoKey:
		switch {
		case r.Code >= 200 && r.Code < 300:
			c.nokeyRan++
		case uncertain(r.Code):
			c.nokeyMaybe++
		}
	}
}

// finish turns per-key findings into violations, one per key; it runs
// once, after the last result.
func (c *checker) finish() {
	if c.finished {
		return
	}
	c.finished = true
	keys := make([]string, 0, len(c.keys))
	for k, o := range c.keys {
		if len(o.others) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		o := c.keys[k]
		// Executions from requests sent while the key's first record
		// lived: two of them are a second execution; later ones are legal.
		live := 0
		if c.inside(o.first, o.execSent) {
			live++
		}
		for _, sent := range o.others {
			if c.inside(o.first, sent) {
				live++
			}
		}
		if live < 2 {
			c.afterTTL++
			continue
		}
		what := "different 2xx bodies"
		if strings.HasPrefix(o.exec, "id ") {
			what = "different created ids"
		}
		c.violate(Violation{Kind: SecondExecution, Key: k, Detail: fmt.Sprintf(
			"%d %s for one key: the handler ran at least %d times (e.g. %s)",
			len(o.others)+1, what, len(o.others)+1, o.example)})
	}
}

// unbounded is the upper bound of a count the TTL leaves open.
const unbounded = math.MaxInt64

// expectedExecutions bounds how many handler executions the measured
// requests may have caused: at least one per key (or nokey request) that
// got a 2xx, at most that plus the ones whose outcome is unknown. A key
// whose requests (a pool key's hits included) may straddle its expiry
// may legally have run again: the upper bound is then unbounded.
func (c *checker) expectedExecutions() (lo, hi uint64) {
	lo, hi = c.nokeyRan, c.nokeyRan+c.nokeyMaybe
	for _, o := range c.keys {
		switch {
		case o.executed:
			lo++
			hi++
		case o.uncertain:
			hi++
		}
		if c.spansTTL(o.first, o.lastSent) {
			hi = unbounded
		}
	}
	for _, o := range c.originals {
		if c.spansTTL(o.start, o.lastSent) {
			hi = unbounded
		}
	}
	return lo, min(hi, unbounded)
}

// maxExecutions is how many executions the oracle may count for key: one,
// unless its requests may straddle its expiry.
func (c *checker) maxExecutions(key string) int64 {
	if o, ok := c.originals[key]; ok && c.spansTTL(o.start, o.lastSent) {
		return unbounded
	}
	if o, ok := c.keys[key]; ok && c.spansTTL(o.first, o.lastSent) {
		return unbounded
	}
	return 1
}

// clipBytes is how much of a body a violation quotes.
const clipBytes = 120

func clip(b []byte) string {
	if len(b) > clipBytes {
		return fmt.Sprintf("%q…", b[:clipBytes])
	}
	return fmt.Sprintf("%q", b)
}

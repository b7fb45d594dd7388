package load

import (
	"fmt"
	"math"
	"sort"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
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
	// One key produced two different successful responses: the handler ran twice.
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
	sum  string // bodySum
	// evidence quotes the body's start for a replay-differs report.
	evidence string
	// start is when the warm-up request was sent: no record of the key is
	// older, so none expires before start+TTL. last is the latest end of a
	// request on the key.
	start, last time.Time
}

// keyOutcome is what the responses for one non-pool key showed.
type keyOutcome struct {
	body      string               // bodySum of the first 2xx body
	bodyEnd   time.Time            // earliest end of a response carrying it
	others    map[string]time.Time // further, different 2xx bodies: earliest end of each
	example   string               // the start of one of those bodies, quoted
	executed  bool                 // some response was 2xx
	uncertain bool                 // some response was 5xx, 409 or a transport error
	// first and last bound the key's requests: the earliest send, the
	// latest end.
	first, last time.Time
}

// checker verifies responses as they stream by; it needs no oracle, so a
// merged results file is re-checked by `load report` the same way. It
// compares bodies by their sums (bodySum) and keeps only a clipped quote
// of each body it may have to show.
type checker struct {
	// ttl is the target's key lifetime (0: forever or unknown): a
	// response that may have come after its key expired is a legal fresh
	// execution, counted in afterTTL and not judged.
	ttl        time.Duration
	originals  map[string]original
	keys       map[string]*keyOutcome
	nokeyRan   uint64 // nokey 2xx: each is an execution
	nokeyMaybe uint64 // nokey 5xx/errors: may or may not have executed
	count      int
	examples   []Violation
	unchecked  uint64 // hits whose key had no usable warm-up response
	afterTTL   uint64 // differing replays / executions after the key may have expired
	finished   bool
}

func newChecker(ttl time.Duration) *checker {
	return &checker{ttl: ttl, originals: map[string]original{}, keys: map[string]*keyOutcome{}}
}

// live reports whether something that ended at end certainly happened
// while a key first sent at first was still alive.
func (c *checker) live(first, end time.Time) bool {
	return c.ttl <= 0 || end.Before(first.Add(c.ttl))
}

// spansTTL reports whether a key's requests may straddle its expiry, so
// that it may legally have executed more than once.
func (c *checker) spansTTL(first, last time.Time) bool {
	return c.ttl > 0 && !c.live(first, last)
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

func (c *checker) add(r *vegeta.Result, p Path, key string) {
	switch p {
	case warmup:
		if r.Code >= 200 && r.Code < 300 {
			c.originals[key] = original{code: r.Code, sum: bodySum(r), evidence: clip(r.Body), start: r.Timestamp, last: r.End()}
		}
	case Hit:
		orig, ok := c.originals[key]
		if !ok {
			c.unchecked++
			return
		}
		if r.End().After(orig.last) {
			orig.last = r.End()
			c.originals[key] = orig
		}
		if r.Code == 0 || r.Code == 429 || r.Code >= 500 {
			return // an error, counted in the path's success ratio
		}
		if r.Code != orig.code || bodySum(r) != orig.sum {
			if !c.live(orig.start, r.End()) {
				c.afterTTL++ // the key may have expired: a fresh execution is legal
				return
			}
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
		end := r.End()
		if end.After(o.last) {
			o.last = end
		}
		switch {
		case r.Code >= 200 && r.Code < 300:
			h := bodySum(r)
			switch {
			case !o.executed:
				o.executed, o.body, o.bodyEnd = true, h, end
			case h == o.body:
				if end.Before(o.bodyEnd) {
					o.bodyEnd = end
				}
			default:
				if o.others == nil {
					o.others, o.example = map[string]time.Time{}, clip(r.Body)
				}
				if old, seen := o.others[h]; !seen || end.Before(old) {
					o.others[h] = end
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
		// Bodies executed for certain while the key's first record lived:
		// two of them are a second execution; later ones are legal.
		live := 0
		if c.live(o.first, o.bodyEnd) {
			live++
		}
		for _, end := range o.others {
			if c.live(o.first, end) {
				live++
			}
		}
		if live < 2 {
			c.afterTTL++
			continue
		}
		c.violate(Violation{Kind: SecondExecution, Key: k, Detail: fmt.Sprintf(
			"%d different 2xx bodies for one key: the handler ran at least %d times (e.g. %s)",
			len(o.others)+1, len(o.others)+1, o.example)})
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
		if c.spansTTL(o.first, o.last) {
			hi = unbounded
		}
	}
	for _, o := range c.originals {
		if c.spansTTL(o.start, o.last) {
			hi = unbounded
		}
	}
	return lo, min(hi, unbounded)
}

// maxExecutions is how many executions the oracle may count for key: one,
// unless its requests may straddle its expiry.
func (c *checker) maxExecutions(key string) int64 {
	if o, ok := c.originals[key]; ok && c.spansTTL(o.start, o.last) {
		return unbounded
	}
	if o, ok := c.keys[key]; ok && c.spansTTL(o.first, o.last) {
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

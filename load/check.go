package load

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"sort"

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
	body []byte
}

// keyOutcome is what the responses for one non-pool key showed.
type keyOutcome struct {
	body      uint64          // hash of the first 2xx body
	others    map[uint64]bool // hashes of further, different 2xx bodies
	example   []byte          // one of those bodies
	executed  bool            // some response was 2xx
	uncertain bool            // some response was 5xx, 409 or a transport error
}

// checker verifies responses as they stream by; it needs no oracle, so a
// merged results file is re-checked by `load report` the same way.
type checker struct {
	seed       maphash.Seed
	originals  map[string]original
	keys       map[string]*keyOutcome
	nokeyRan   uint64 // nokey 2xx: each is an execution
	nokeyMaybe uint64 // nokey 5xx/errors: may or may not have executed
	count      int
	examples   []Violation
	unchecked  uint64 // hits whose key had no usable warm-up response
	finished   bool
}

func newChecker() *checker {
	return &checker{seed: maphash.MakeSeed(), originals: map[string]original{}, keys: map[string]*keyOutcome{}}
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
			c.originals[key] = original{code: r.Code, body: bytes.Clone(r.Body)}
		}
	case Hit:
		orig, ok := c.originals[key]
		if !ok {
			c.unchecked++
			return
		}
		if r.Code == 0 || r.Code == 429 || r.Code >= 500 {
			return // an error, counted in the path's success ratio
		}
		if r.Code != orig.code || !bytes.Equal(r.Body, orig.body) {
			c.violate(Violation{Kind: ReplayDiffers, Key: key,
				Detail: fmt.Sprintf("replay got %d %s, original was %d %s", r.Code, clip(r.Body), orig.code, clip(orig.body))})
		}
	case Miss, Contention:
		o := c.keys[key]
		if o == nil {
			o = &keyOutcome{}
			c.keys[key] = o
		}
		switch {
		case r.Code >= 200 && r.Code < 300:
			h := maphash.Bytes(c.seed, r.Body)
			switch {
			case !o.executed:
				o.executed, o.body = true, h
			case h != o.body && !o.others[h]:
				if o.others == nil {
					o.others, o.example = map[uint64]bool{}, bytes.Clone(r.Body)
				}
				o.others[h] = true
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
		c.violate(Violation{Kind: SecondExecution, Key: k, Detail: fmt.Sprintf(
			"%d different 2xx bodies for one key: the handler ran at least %d times (e.g. %s)",
			len(o.others)+1, len(o.others)+1, clip(o.example))})
	}
}

// expectedExecutions bounds how many handler executions the measured
// requests may have caused: at least one per key (or nokey request) that
// got a 2xx, at most that plus the ones whose outcome is unknown.
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
	}
	return lo, hi
}

func clip(b []byte) string {
	const n = 120
	if len(b) > n {
		return fmt.Sprintf("%q…", b[:n])
	}
	return fmt.Sprintf("%q", b)
}

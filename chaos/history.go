package chaos

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// What the client got from an attempt (Jepsen's ok / fail / info).
const (
	ClientOK      = "ok"      // a complete response
	ClientFail    = "fail"    // a definite "not done" (the proxy answered without forwarding)
	ClientUnknown = "unknown" // no complete answer: it may or may not have happened
	// ClientInterrupted: the run ended (SIGINT, --deadline) before the
	// client got a final answer; the op is not judged on what it saw.
	ClientInterrupted = "interrupted"
)

// Run is a history's header line (type "run"): what the checker needs to
// know about the target to judge the history the same way offline.
type Run struct {
	Type string `json:"type"`
	// TTLNS is the target's key lifetime in nanoseconds (0: forever or
	// unknown).
	TTLNS int64 `json:"ttl_ns"`
	// MarginNS is the profile's margin before the TTL (the checker's
	// Margin).
	MarginNS int64 `json:"margin_ns,omitempty"`
	// ReplicaKills: the run SIGKILLed replicas (the checker's
	// ReplicaKills).
	ReplicaKills bool `json:"replica_kills,omitempty"`
	// StaleReplay: the profile's stale_replay_on_mismatch (the checker's
	// StaleReplay).
	StaleReplay bool `json:"stale_replay,omitempty"`
	// Protocol is what the proxy carried: HTTP/1.1, or gRPC (whose
	// answers the attempts give in HTTP terms, the code in grpc_code).
	// Older histories have none.
	Protocol string `json:"protocol,omitempty"`
}

// Event is one attempt as the proxy saw it: one JSONL line of type
// "attempt".
type Event struct {
	Type          string     `json:"type"`
	Time          time.Time  `json:"time"`
	Key           string     `json:"key,omitempty"`
	Attempt       int        `json:"attempt"` // per key, 1-based; 0 without a key
	Method        string     `json:"method"`
	Path          string     `json:"path"`
	RequestSHA256 string     `json:"request_sha256"`
	Fault         string     `json:"fault,omitempty"`
	Rule          string     `json:"rule,omitempty"`
	Upstream      []Upstream `json:"upstream,omitempty"` // one per forwarded copy
	Client        string     `json:"client"`
	Status        int        `json:"status,omitempty"` // sent to the client
	// GRPCCode is the code of the status sent to a gRPC client (its name),
	// Status the HTTP status google.rpc.Code maps it to.
	GRPCCode   string `json:"grpc_code,omitempty"`
	DurationNS int64  `json:"duration_ns"`
}

// Op is a logical operation as the retrying client saw it: one JSONL line
// of type "op", written by the driver after it finished the key.
type Op struct {
	Type      string `json:"type"`
	Key       string `json:"key"`
	Operation string `json:"operation"`
	// Kind is the driver's op shape (see chaos/drive): what the checker
	// may expect of the key.
	Kind     string `json:"kind"`
	Attempts int    `json:"attempts"`
	Outcome  string `json:"outcome"` // ClientOK / ClientFail / ClientUnknown
	Status   int    `json:"status,omitempty"`
	ID       string `json:"id,omitempty"`
	Error    string `json:"error,omitempty"`
	// Oracle is the effects probe's execution count; nil when not probed.
	Oracle     *int  `json:"oracle,omitempty"`
	DurationNS int64 `json:"duration_ns"`
}

// Op kinds the checker understands.
const (
	KindNormal    = "normal"    // must execute exactly once and answer 2xx
	KindStorm     = "storm"     // slow, with overlapping same-key retries
	KindMutated   = "mutated"   // retries carry a materially different body
	KindBusiness  = "business"  // a 4xx outcome, recorded once and replayed
	KindTransient = "transient" // a 5xx outcome, which must not be replayed
)

// History streams lines to a file through a buffer; memory stays bounded
// whatever the run length. Safe for concurrent use; a nil *History
// records nothing.
type History struct {
	mu  sync.Mutex
	bw  *bufio.Writer
	enc *json.Encoder
	c   io.Closer
	err error
	// observe, when set, sees every attempt line as it is written.
	observe func(Event)
}

// Observe calls f with every attempt written from now on (a live view of
// the run); f must not block. Set it before the proxy serves.
func (h *History) Observe(f func(Event)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observe = f
}

// CreateHistory creates (truncates) the JSONL file at path.
func CreateHistory(path string) (*History, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	h := NewHistory(f)
	h.c = f
	return h, nil
}

// NewHistory writes lines to w.
func NewHistory(w io.Writer) *History {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &History{bw: bw, enc: json.NewEncoder(bw)}
}

func (h *History) write(v any) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if ev, ok := v.(*Event); ok && h.observe != nil {
		h.observe(*ev)
	}
	if h.err == nil {
		h.err = h.enc.Encode(v)
	}
}

// WriteRun records the run's header line.
func (h *History) WriteRun(r Run) {
	r.Type = "run"
	h.write(&r)
}

// WriteOp records a client-side operation.
func (h *History) WriteOp(op Op) {
	op.Type = "op"
	h.write(&op)
}

// Flush writes buffered lines out.
func (h *History) Flush() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.bw.Flush(); h.err == nil {
		h.err = err
	}
	return h.err
}

// Close flushes the buffer and closes the file; it returns the first
// write error, so a full disk is not silent.
func (h *History) Close() error {
	if h == nil {
		return nil
	}
	_ = h.Flush() // a flush error is kept in h.err
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c != nil {
		if err := h.c.Close(); h.err == nil {
			h.err = err
		}
		h.c = nil
	}
	return h.err
}

// ReadHistory feeds every line of r to c. Errors name the line. A history
// with no attempt or op is an error: there is nothing to judge. A last
// line that does not parse is what a run killed mid-write leaves: with
// skipTornTail it is skipped and torn names it, else it is an error that
// says so; a line that does not parse followed by more lines is always an
// error.
func ReadHistory(r io.Reader, c *Checker, skipTornTail bool) (torn string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var bad error // the last line that did not parse, if nothing follows it
	fed := 0
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		if bad != nil {
			return "", bad
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			bad = fmt.Errorf("history line %d: %v", n, err)
			continue
		}
		switch head.Type {
		case "run":
			var run Run
			if err := json.Unmarshal(line, &run); err != nil {
				bad = fmt.Errorf("history line %d: %v", n, err)
				continue
			}
			if c.TTL == 0 {
				c.TTL = time.Duration(run.TTLNS)
			}
			if c.Margin == 0 {
				c.Margin = time.Duration(run.MarginNS)
			}
			c.ReplicaKills = c.ReplicaKills || run.ReplicaKills
			c.StaleReplay = c.StaleReplay || run.StaleReplay
			if c.Protocol == "" {
				c.Protocol = run.Protocol
			}
		case "attempt":
			var ev Event
			if err := json.Unmarshal(line, &ev); err != nil {
				bad = fmt.Errorf("history line %d: %v", n, err)
				continue
			}
			c.Attempt(ev)
			fed++
		case "op":
			var op Op
			if err := json.Unmarshal(line, &op); err != nil {
				bad = fmt.Errorf("history line %d: %v", n, err)
				continue
			}
			c.Op(op)
			fed++
		default:
			return "", fmt.Errorf("history line %d: unknown type %q (want run, attempt or op)", n, head.Type)
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if bad != nil {
		if !skipTornTail {
			return "", fmt.Errorf("%v: a torn last line (skip it with --skip-torn-tail)", bad)
		}
		torn = bad.Error()
	}
	if fed == 0 {
		return torn, errors.New("empty history: no attempt or op line to judge")
	}
	return torn, nil
}

// ScanHistory calls attempt and op for every line of a history; the run
// line and blank lines are skipped. Errors name the line.
func ScanHistory(r io.Reader, attempt func(*Event), op func(*Op)) error {
	dec := json.NewDecoder(r)
	for n := 1; ; n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("history line %d: %v", n, err)
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return fmt.Errorf("history line %d: %v", n, err)
		}
		switch head.Type {
		case "attempt":
			var ev Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				return fmt.Errorf("history line %d: %v", n, err)
			}
			attempt(&ev)
		case "op":
			var o Op
			if err := json.Unmarshal(raw, &o); err != nil {
				return fmt.Errorf("history line %d: %v", n, err)
			}
			op(&o)
		}
	}
}

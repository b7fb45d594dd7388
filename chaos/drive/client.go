package drive

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/wire"
)

// driver is the retrying client: same key on every retry, exponential
// backoff with full jitter, honours 409/429/503 Retry-After, bounded in
// attempts and time.
type driver struct {
	cfg config
	// calls carries every attempt to the in-process proxy (its
	// chaos.Front's carrier: requests built and sent as the engine's).
	calls wire.Carrier
	// direct carries the setups straight to the target (no fault, no
	// history: nothing is judged of them).
	direct wire.Carrier
	hist   *chaos.History
	onOp   func(chaos.Op) // progress hook, nil when not asked
	keys   *wire.Keys
	ev     *evidence.Evidence   // per-key execution counts (nil: none)
	double *evidence.Downstream // marks requests and makes variants behave (nil: none)
	mu     sync.Mutex
	rng    *rand.Rand
	keyErr error // the first key that could not be fetched
}

// Backoff bounds.
const (
	backoffBase = 5 * time.Millisecond
	backoffCap  = 500 * time.Millisecond
	retryAfter  = 2 * time.Second // cap on a server's Retry-After
	// transientAttempts: a 5xx outcome is retried this many times, enough
	// to show whether the server re-executes or replays it.
	transientAttempts = 3
	stormHedges       = 2 // extra same-key attempts while a slow one is in flight
)

func newDriver(cfg config, calls wire.Carrier, h *chaos.History, keys *wire.Keys) *driver {
	return &driver{cfg: cfg, calls: calls, hist: h, keys: keys, rng: rand.New(rand.NewPCG(cfg.seed, 0xbac0ff))}
}

func (d *driver) keyError() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.keyErr
}

func (d *driver) jitter(n time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return time.Duration(d.rng.Int64N(int64(n)))
}

// answer is one attempt's outcome.
type answer struct {
	status     int
	id         string
	err        error
	retryAfter time.Duration
	injected   bool // the proxy made the answer up (status fault, 502)
}

// definite reports whether a ends the operation: an answer of the
// server's that is not a retryable one (made up by the proxy, 429, 5xx)
// nor the profile's in-flight status. business is the status the shape's
// business-error variant declares (0: none): an operation whose business
// answer is also the in-flight status ends on it.
func (d *driver) definite(a answer, business int) bool {
	if a.err != nil || a.status == 0 || a.injected || a.status == http.StatusTooManyRequests || a.status >= 500 {
		return false
	}
	return a.status == business || !d.inFlight(a.status)
}

// inFlight reports whether status is the profile's in-flight answer.
func (d *driver) inFlight(status int) bool {
	if d.cfg.inFlight == nil {
		return status == http.StatusConflict
	}
	return slices.Contains(d.cfg.inFlight, status)
}

// run drives one logical operation to its end and returns the client's
// record; ok is false when no key could be had (keyErr says why).
func (d *driver) run(ctx context.Context, s shape) (rec chaos.Op, ok bool) {
	start := time.Now()
	key, err := d.keys.Next(ctx, nil)
	if err != nil {
		d.mu.Lock()
		if d.keyErr == nil && ctx.Err() == nil {
			d.keyErr = err
		}
		d.mu.Unlock()
		return rec, false
	}
	t, op := d.cfg.target, s.op
	rec = chaos.Op{Key: key, Operation: op.Name, Kind: s.kind}
	d.cfg.keyOps.set(key, op)
	vals, err := d.setup(ctx, op)
	if err != nil {
		d.mu.Lock()
		if d.keyErr == nil && ctx.Err() == nil {
			d.keyErr = err // a setup error stops the run, as a key that could not be had
		}
		d.mu.Unlock()
		return rec, false
	}
	first, later := t.Body(op), []byte(nil)
	attempts := d.cfg.maxAttempts
	variant := ""
	switch s.kind {
	case chaos.KindStorm:
		variant = apispec.VariantSlow
	case chaos.KindMutated:
		m, _ := op.BodyMutation() // the shape was chosen for it
		later = t.Body(op, m.Patch)
	case chaos.KindBusiness:
		variant = apispec.VariantBusinessError
	case chaos.KindTransient:
		variant = apispec.VariantTransientError
		attempts = min(attempts, transientAttempts)
	}
	business := 0
	if variant != "" {
		var v apispec.Variant
		first, v, _ = t.Variant(op, variant)
		if s.kind == chaos.KindBusiness {
			business = apispec.HTTPStatusOf(v.Status)
		}
		_ = d.double.BehaveVariant(op, key, variant) // the double's answers, when it runs; routes are validated
	}
	var last answer
	if s.kind == chaos.KindStorm {
		last = d.storm(ctx, op, key, first, vals, &rec)
	}
	for !d.definite(last, business) && rec.Attempts < attempts && ctx.Err() == nil {
		if rec.Attempts > 0 && !d.wait(ctx, rec.Attempts, last) {
			break
		}
		body := first
		if rec.Attempts > 0 && later != nil {
			body = later
		}
		last = d.send(ctx, op, key, body, vals)
		rec.Attempts++
	}
	switch {
	case ctx.Err() != nil && !d.definite(last, business):
		// The run ended (SIGINT, --deadline) before the client got its
		// final answer: what it saw is not judged.
		rec.Outcome, rec.Status, rec.Error = chaos.ClientInterrupted, last.status, "cut short: "+ctx.Err().Error()
	case last.err != nil:
		rec.Outcome, rec.Error = chaos.ClientUnknown, statusText(last.err)
	case last.status >= 200 && last.status < 300:
		rec.Outcome, rec.Status, rec.ID = chaos.ClientOK, last.status, last.id
	case last.injected:
		rec.Outcome, rec.Status = chaos.ClientUnknown, last.status
	case last.err == nil && d.inFlight(last.status) && last.status != business:
		// Still the in-flight answer at the attempt limit: not done, as
		// far as the client knows, and said so.
		rec.Outcome, rec.Status = chaos.ClientUnknown, last.status
		rec.Error = fmt.Sprintf("%d (the profile's in-flight answer) to each of %d attempts: still in flight, or a business answer the profile does not name (in_flight_status)", last.status, rec.Attempts)
	default:
		rec.Outcome, rec.Status = chaos.ClientFail, last.status
	}
	if n, ok := d.oracle(ctx, key); ok {
		rec.Oracle = &n
	}
	rec.DurationNS = time.Since(start).Nanoseconds()
	return rec, true
}

// storm sends a slow attempt and, while it is in flight, stormHedges more
// with the same key at jittered moments: the overlapping retries of a
// client whose timeout is shorter than the server's work. It returns the
// best answer (a 2xx over anything else).
func (d *driver) storm(ctx context.Context, op *apispec.Operation, key string, body []byte, vals wire.SetupValues, rec *chaos.Op) answer {
	slow := op.Variants[apispec.VariantSlow].Duration
	answers := make([]answer, 1+stormHedges)
	var wg sync.WaitGroup
	for i := range answers {
		delay := time.Duration(0)
		if i > 0 {
			delay = slow/4 + d.jitter(slow/4)
		}
		wg.Go(func() {
			if delay > 0 {
				t := time.NewTimer(delay)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
					answers[i] = answer{err: ctx.Err()}
					return
				}
			}
			answers[i] = d.send(ctx, op, key, body, vals)
		})
	}
	wg.Wait()
	rec.Attempts += len(answers)
	best := answers[0]
	for _, a := range answers {
		if a.err == nil && a.status >= 200 && a.status < 300 {
			return a
		}
		if best.err != nil && a.err == nil {
			best = a
		}
	}
	return best
}

// wait sleeps before attempt n+1: the server's Retry-After when it gave one
// (capped), else exponential backoff with full jitter. False if ctx ended.
func (d *driver) wait(ctx context.Context, n int, last answer) bool {
	delay := last.retryAfter
	if delay == 0 {
		// A conflict may be a key held by an attempt killed mid-flight:
		// the retries wait out the target's lease rather than spend their
		// attempts before it ends.
		limit := backoffCap
		if last.status == http.StatusConflict && d.cfg.target.Lease > 0 {
			limit = max(limit, d.cfg.target.Lease/4)
		}
		delay = d.jitter(min(limit, backoffBase<<min(n, 10)))
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// send makes one attempt through the proxy, acting on the resource vals
// name (the key's setup): built and sent by the proxy's carrier (the key
// where the target puts it: a header, a message field, AEP-155's
// first_sent the same on every retry of the key, or metadata), bounded by
// the target's timeout. The proxy labels what it made up (Idemcheck-Fault,
// in a gRPC call's trailer).
func (d *driver) send(ctx context.Context, op *apispec.Operation, key string, body []byte, vals wire.SetupValues) answer {
	x := d.calls.Build(op, wire.Request{Key: key, Body: body})
	vals.Bind(&x)
	x.Request.URL, x.Request.Body = d.double.Mark(op, key, x.Request.URL, x.Request.Header, x.Request.Body)
	resp, _ := d.calls.Do(ctx, x)
	if resp.Err != nil {
		// A reset mid-body included: the status line arrived, the answer
		// did not.
		return answer{err: resp.Err}
	}
	a := answer{status: resp.Status, injected: resp.Header.Get(chaos.FaultHeader) != "" && resp.Status >= 500}
	if resp.OK() {
		a.id = op.ExecutionMark(resp.Body) // the operation's own pointer; none: no id, never the whole body
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		a.retryAfter = min(time.Duration(s)*time.Second, retryAfter)
	}
	return a
}

// oracle reads key's executions from the evidence sources directly (not
// through the proxy); ok is false without a per-key source or on any
// error.
func (d *driver) oracle(ctx context.Context, key string) (int, bool) {
	if d.ev == nil {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := d.ev.Count(ctx, key, nil)
	return n, err == nil
}

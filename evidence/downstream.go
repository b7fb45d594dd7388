package evidence

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence/double"
	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/wire"
)

// Downstream is the double of a run: the server, and which of the run's
// keys and operations its calls are attributed to. Every method is nil-safe
// (nil: no double runs). Open it with StartDownstream; the engine, chaos
// and load mark their requests with Mark and count through Evidence.
// Without a double but with markers for the events source, it only marks:
// no server runs, and it counts no call.
type Downstream struct {
	t   *apispec.Target
	srv *double.Server // nil: it only marks
	// salt makes the tokens of one run differ from another's, whatever
	// the keys (--key-seed repeats keys).
	salt string
	// keys: some operation has no marker, so keys themselves are tracked.
	keys bool
	// global: calibration saw the calls carry no token; counts are read
	// around each key's requests, as a global counter's (serial run).
	global atomic.Bool

	// variants are the bodies Env.Variant handed out for variants with a
	// downstream: behaviour, by their first byte's address: the request
	// layer (Env.markForDouble) knows one by its backing array, even when
	// it equals the normal body.
	mu       sync.Mutex
	variants map[*byte]string
	// witnesses are the operations whose calibration request, counted by
	// another oracle, called the double with its key's token: the double
	// then sees their keyless requests' executions too (CountsKeyless).
	witnesses map[string]bool
}

// VariantBody returns a copy of body, the body of variant name, that
// VariantOf recognises. A nil d (no double) returns body.
func (d *Downstream) VariantBody(body []byte, name string) []byte {
	if d == nil || len(body) == 0 {
		return body
	}
	body = bytes.Clone(body)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.variants == nil {
		d.variants = map[*byte]string{}
	}
	d.variants[&body[0]] = name
	return body
}

// VariantOf is the variant whose body VariantBody handed out as body (the
// same backing array), "" when none.
func (d *Downstream) VariantOf(body []byte) string {
	if d == nil || len(body) == 0 {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.variants[&body[0]]
}

// StartDownstream starts the double of t.Downstream. Without one it is
// nil (and no error), unless the events source reads the operations'
// markers: it then only marks the requests. The caller closes it. Errors
// are one line (port in use: exit 2).
func StartDownstream(ctx context.Context, t *apispec.Target) (*Downstream, error) {
	var srv *double.Server
	if t.Downstream != nil {
		var err error
		if srv, err = double.Start(ctx, *t.Downstream); err != nil {
			return nil, err
		}
	} else if t.Events == nil || !slices.ContainsFunc(t.Operations, func(op apispec.Operation) bool { return op.Marker != nil }) {
		return nil, nil
	}
	var salt [8]byte
	_, _ = rand.Read(salt[:])
	d := &Downstream{t: t, srv: srv, salt: hex.EncodeToString(salt[:])}
	for i := range t.Operations {
		if t.Operations[i].Marker == nil {
			d.keys = true
		}
	}
	return d, nil
}

// Server is the running double, nil when none runs.
func (d *Downstream) Server() *double.Server {
	if d == nil {
		return nil
	}
	return d.srv
}

// runs reports whether a double runs (not only marks).
func (d *Downstream) runs() bool { return d != nil && d.srv != nil }

// URL is the double's base URL (the API's provider URL), "" when none runs.
func (d *Downstream) URL() string {
	if !d.runs() {
		return ""
	}
	return d.srv.URL()
}

// Started points d at t, the target as started for the run (a managed
// target's address is known only once its process listens, after the
// double whose URL it was given). Nil-safe.
func (d *Downstream) Started(t *apispec.Target) {
	if d != nil {
		d.t = t
	}
}

// Close stops the double, waiting at most a few seconds for calls it holds
// back (they are cut at once; see double.Server.Close). Nil-safe.
func (d *Downstream) Close() {
	if !d.runs() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = d.srv.Close(ctx)
}

// Token is the token idemcheck writes into key's requests (a body, header
// or query marker): double.Prefix and a hash of the run's salt and key.
// "" when no double runs.
func (d *Downstream) Token(key string) string {
	if d == nil {
		return ""
	}
	h := sha256.Sum256([]byte(d.salt + "\x00" + key))
	return double.Prefix + hex.EncodeToString(h[:(double.TokenLen-len(double.Prefix))/2])
}

// CountsScopes reports whether the double counts the calls of requests
// sent without a key, or with raw key field lines, by a scope of their
// own: every oracle is a downstream one still counting per key and every
// operation has a marker, so such a request carries a token of its own
// (Env.noKeyScope, KeyLinesScope), not one of a key the server may or may
// not read from it. A per-key HTTP counter cannot count a keyless request
// at all.
func (d *Downstream) CountsScopes() bool {
	if !d.runs() || d.keys || d.global.Load() {
		return false
	}
	os := d.t.Oracles()
	for _, o := range os {
		if o.Downstream == "" {
			return false
		}
	}
	return len(os) > 0
}

// Witness notes whether op's calibration request under key (counted once
// by the configured oracle) called the double with the key's token.
func (d *Downstream) Witness(op *apispec.Operation, key string) {
	if !d.runs() {
		return
	}
	seen := d.Calls(key, "") > 0
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.witnesses == nil {
		d.witnesses = map[string]bool{}
	}
	d.witnesses[op.Name] = seen
}

// CountsKeyless reports whether the double counts the executions of op's
// requests sent without a key, by their case's own scope: as the oracle
// (CountsScopes), or as a witness beside an oracle that cannot count them
// (a per-key SQL query or HTTP counter), once calibration saw op's
// execution call the double with its token.
func (d *Downstream) CountsKeyless(op *apispec.Operation) bool {
	if !d.runs() {
		return false
	}
	if d.CountsScopes() {
		return true
	}
	if d.keys || d.global.Load() || op == nil || op.Marker == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.witnesses[op.Name]
}

// track makes the double count key's calls: those holding its token
// (returned), and those holding the key itself when an operation has no
// marker. A double must be running.
func (d *Downstream) track(key string) string {
	tok := d.Token(key)
	if !d.runs() {
		return tok
	}
	d.srv.Track(tok)
	if d.keys {
		d.srv.Track(key)
	}
	return tok
}

// BehaveVariant makes the double answer key's calls as op's variant says
// (its downstream:), when a double runs and the variant has one.
func (d *Downstream) BehaveVariant(op *apispec.Operation, key, variant string) error {
	return d.behave(op, key, variant, false)
}

// EndVariant makes the double answer key's calls of the route op's
// variant names as the route does again, after BehaveVariant: the
// provider has recovered, so a retry of the normal request under key can
// succeed.
func (d *Downstream) EndVariant(op *apispec.Operation, key, variant string) error {
	return d.behave(op, key, variant, true)
}

func (d *Downstream) behave(op *apispec.Operation, key, variant string, end bool) error {
	v, ok := op.Variants[variant]
	if !d.runs() || !ok || v.Downstream == nil || key == "" {
		return nil
	}
	tok := d.track(key)
	if op.Marker == nil {
		tok = key // the API forwards the key itself
	}
	b := v.Downstream.Behaviour
	if end {
		b = double.Behaviour{} // changes nothing of the route's answer
	}
	return d.srv.Behave(tok, v.Downstream.Route, b)
}

// Calls is how many calls of route hold key's token (or the
// key); exact, from the double's counts.
func (d *Downstream) Calls(key, route string) int {
	if !d.runs() || key == "" {
		return 0
	}
	n := d.srv.Calls(d.Token(key), route)
	if d.keys {
		n += d.srv.Calls(key, route)
	}
	return n
}

// Journal lists the kept calls that hold key's token or the key,
// oldest first.
func (d *Downstream) Journal(key string) []double.Call {
	if !d.runs() || key == "" {
		return nil
	}
	calls := d.srv.Journal(d.Token(key))
	if d.keys {
		calls = append(calls, d.srv.Journal(key)...)
		sort.SliceStable(calls, func(i, j int) bool { return calls[i].Time.Before(calls[j].Time) })
	}
	return calls
}

// Untokened is how many calls of op's downstream oracle route
// held no token so far (0 without one).
func (d *Downstream) Untokened(op *apispec.Operation) int {
	if !d.runs() {
		return 0
	}
	o := d.t.OracleOf(op)
	if o == nil || o.Downstream == "" {
		return 0
	}
	return d.srv.Untokened(o.Downstream)
}

// Global is calibration's verdict when op's request under a
// fresh key made n calls that hold no token: with one, the double counts
// every call of the route and the run goes serial (a note says why and
// how to avoid it); with more, nothing can be counted (a problem).
func (d *Downstream) Global(op *apispec.Operation, n int) (problem, note string) {
	route := d.t.OracleOf(op).Downstream
	fix := "set marker: on the operation (a body member, header or query parameter the API passes on to its provider)"
	if op.Marker != nil {
		fix = fmt.Sprintf("the API does not pass its marker (%s) on to its provider", op.Marker)
	}
	if n > 1 {
		return fmt.Sprintf("downstream %s: one request to %s %s under a fresh key made %d calls and none holds its token (%s); effect-counting cases are inconclusive", route, op.Method, op.Path, n, fix), ""
	}
	for _, o := range d.t.Oracles() {
		if o.Downstream == "" { // a per-key source beside it has no global count to read
			return fmt.Sprintf("downstream %s: the call %s %s made under a fresh key holds no token, and beside the per-key %s it cannot count globally (%s); effect-counting cases are inconclusive", route, op.Method, op.Path, o, fix), ""
		}
	}
	d.global.Store(true)
	behaves := ""
	for _, v := range op.Variants {
		if v.Downstream != nil {
			behaves = "; the variants' downstream: behaviours follow the token too, so the cases needing them are inconclusive"
		}
	}
	return "", fmt.Sprintf("downstream %s: the call %s %s made under a fresh key holds no token, so the route's calls are counted globally and the run is serial (%s)%s", route, op.Method, op.Path, fix, behaves)
}

// maxCallsShown bounds the calls one evidence line times (a same-key
// burst against a broken API makes dozens).
const maxCallsShown = 8

// Lines is key's calls of the double, one line per route, named name and
// timed from first: "downstream payments: 2 calls for key …3f2a, at +3 ms
// (200) and +1,212 ms (200)". None when key made no call.
func (d *Downstream) Lines(key, name string, first time.Time) []string {
	byRoute := map[string][]double.Call{}
	var routes []string
	for _, c := range d.Journal(key) {
		if byRoute[c.Route] == nil {
			routes = append(routes, c.Route)
		}
		byRoute[c.Route] = append(byRoute[c.Route], c)
	}
	var out []string
	for _, route := range routes {
		calls := byRoute[route]
		if route == "" {
			route = "(no route)"
		}
		at := make([]string, 0, min(len(calls), maxCallsShown+1))
		for i, c := range calls {
			if i == maxCallsShown {
				at = append(at, fmt.Sprintf("%d more", len(calls)-i))
				break
			}
			answer := fmt.Sprint(c.Status)
			if c.Hung {
				answer = "held, never answered"
			} else if c.Delay > 0 {
				answer += fmt.Sprintf(" after %s", c.Delay)
			}
			at = append(at, fmt.Sprintf("+%s ms (%s)", thousands(c.Time.Sub(first).Milliseconds()), answer))
		}
		noun := "calls"
		if len(calls) == 1 {
			noun = "call"
		}
		out = append(out, fmt.Sprintf("downstream %s: %d %s for %s, at %s", route, len(calls), noun, name, joinAnd(at)))
	}
	return out
}

// thousands writes n with comma separators (1,212).
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// Check is calibration for the faces that do not run the catalog (chaos,
// load): when a downstream oracle counts, one normal request of its
// operation under a fresh key, sent over c, must make one call holding the
// key's token. It returns "" when so (or when no downstream oracle counts);
// else a one-line note, and ok says whether the double can still count:
// untokened calls make it count globally (as in a run), no call at all
// leaves nothing to count with.
func (d *Downstream) Check(ctx context.Context, c wire.Carrier) (note string, ok bool) {
	if !d.runs() {
		return "", true
	}
	t := d.t
	var op *apispec.Operation
	for i := range t.Operations {
		if o := t.OracleOf(&t.Operations[i]); o != nil && o.Downstream != "" {
			op = &t.Operations[i]
			break
		}
	}
	if op == nil {
		return "", true
	}
	ctx, cancel := context.WithTimeout(ctx, 2*t.Timeout+CalibrationWait)
	defer cancel()
	k := uuid.NewString()
	route := t.OracleOf(op).Downstream
	untokened := d.Untokened(op)
	x := c.Build(op, wire.Request{Label: "double check", Key: k})
	if err := wire.WithFreshResource(ctx, c, t, op, 0, "", &x); err != nil {
		return fmt.Sprintf("downstream %s: %v, so the double could not be checked; its counts are not used", route, err), false
	}
	x.Request.URL, x.Request.Body = d.Mark(op, k, x.Request.URL, x.Request.Header, x.Request.Body)
	r, _ := c.Do(ctx, x)
	if !r.OK() {
		return fmt.Sprintf("downstream %s: the normal call answered %s, so the double could not be checked; its counts are not used", route, r.String()), false
	}
	deadline := time.Now().Add(CalibrationWait)
	for {
		switch n, u := d.Calls(k, route), d.Untokened(op)-untokened; {
		case n == 1:
			return "", true
		case n > 1:
			return fmt.Sprintf("downstream %s: one request under a fresh key made %d calls holding its token; its counts are not used", route, n), false
		case u > 0:
			problem, note := d.Global(op, u)
			if problem != "" {
				return problem, false
			}
			return note, true
		case time.Now().After(deadline) || ctx.Err() != nil:
			return d.Silent(op, r.Status) + "; its counts are not used", false
		}
		if clock.Until(ctx, time.Now().Add(50*time.Millisecond)) != nil {
			continue // the deadline case reports it
		}
	}
}

// Silent is the problem of op's downstream oracle route when a request
// answered status under a fresh key and made no call to the double.
func (d *Downstream) Silent(op *apispec.Operation, status int) string {
	return fmt.Sprintf("downstream %s: a %d answer to %s %s under a fresh key made no call to the double at %s within %s: point the API's provider URL at it", d.t.OracleOf(op).Downstream, status, op.Method, op.Path, d.URL(), CalibrationWait)
}

// Mark writes key's token for the downstream double into a request of op
// (every face calls it: the conformance engine's Env.Send, the chaos
// driver, the load targets): at op's marker (a body pointer, the rest of
// the body byte for byte; a header, set in h; a query parameter), and
// makes the double count the key's calls. It returns the URL and body to
// send; without a double they are unchanged.
func (d *Downstream) Mark(op *apispec.Operation, key, rawURL string, h http.Header, body []byte) (string, []byte) {
	if d == nil || key == "" {
		return rawURL, body
	}
	tok := d.track(key)
	m := op.Marker
	if m == nil {
		return rawURL, body
	}
	switch {
	case m.Header != "":
		h.Set(m.Header, tok)
	case m.Query != "":
		sep := "?"
		if strings.Contains(rawURL, "?") {
			sep = "&"
		}
		rawURL += sep + m.Query + "=" + tok // a token needs no escaping
	default:
		value := []byte(`"` + tok + `"`)
		if out, ok := jsonx.Replace(body, m.Pointer, value); ok {
			return rawURL, out
		}
		// The body lost the member (a patch removed it): add it back.
		if patch, ok := pointerPatch(m.Pointer, value); ok {
			if out, err := jsonx.MergePatch(body, patch); err == nil && jsonx.IsObject(body) {
				return rawURL, out
			}
		}
	}
	return rawURL, body
}

// pointerPatch is the merge patch setting value at p (objects only).
func pointerPatch(p string, value []byte) ([]byte, bool) {
	toks, err := jsonx.ParsePointer(p)
	if err != nil || len(toks) == 0 {
		return nil, false
	}
	out := value
	for i := len(toks) - 1; i >= 0; i-- {
		k, _ := json.Marshal(toks[i]) // a string always marshals
		out = append(append(append([]byte("{"), k...), ':'), append(out, '}')...)
	}
	return out, true
}

// callsSoFar is how many calls the double has taken (0 when none runs).
func (d *Downstream) callsSoFar() int {
	if !d.runs() {
		return 0
	}
	return d.srv.Totals().Calls
}

// saw says what the API called at the double since it had taken before
// calls (a probe's: nothing else runs then) and what the double answered:
// the route's configured answer, which no variant changes for a probe.
func (d *Downstream) saw(before int, r wire.Resp) string {
	srv := d.srv
	calls := srv.Journal("")
	if n := srv.Totals().Calls - before; n < len(calls) {
		calls = calls[len(calls)-max(n, 0):]
	}
	if len(calls) == 0 {
		return fmt.Sprintf("the API made no call to the double at %s", srv.URL())
	}
	routes := srv.Config().Routes
	var said []string
	for _, c := range calls {
		if c.Route == "" {
			said = append(said, fmt.Sprintf("the API called %s %s, which no route of the double matches (it answered 404)", c.Method, c.Path))
			continue
		}
		answer := fmt.Sprintf("%d", c.Status)
		if c.Hung {
			answer = "nothing (hung)"
		}
		for _, rt := range routes {
			if rt.Name == c.Route && len(rt.Response.Body) > 0 && !c.Hung {
				answer += " " + wire.ClipText(rt.Response.Body)
			}
		}
		said = append(said, fmt.Sprintf("the API called %s (%s %s); the double answered %s", c.Route, c.Method, c.Path, answer))
	}
	status := "gave no answer"
	if r.Err == nil {
		status = fmt.Sprintf("answered %d", r.Status)
	}
	return strings.Join(said, "; ") + " and the API " + status
}

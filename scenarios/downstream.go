package scenarios

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/evidence/double"
)

// The downstream double in a run: idemcheck starts it where the API under
// test sends a dependency's calls (Target.Downstream), writes a token
// unique to each key into the key's requests (Operation.Marker, through
// Target.Mark), counts a key's executions as the calls of a route that
// hold its token (Oracle.Downstream) and makes a variant's calls slow or
// failing by the key's token (Variant.Downstream).

// Marker is where a key's token goes in each of its requests: a JSON
// pointer into the body ("marker: /reference"), a header
// ("{header: X-Ref}") or a query parameter ("{query: ref}"). Without a
// marker the key itself is the token (an API that forwards the client's
// key to its provider).
type Marker struct {
	Pointer string `yaml:"pointer" json:"pointer,omitempty"`
	Header  string `yaml:"header" json:"header,omitempty"`
	Query   string `yaml:"query" json:"query,omitempty"`
}

// UnmarshalYAML reads a pointer ("/reference") or a mapping.
func (m *Marker) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*m = Marker{Pointer: n.Value}
		return nil
	}
	type plain Marker
	return n.Decode((*plain)(m))
}

// String is the marker as the config writes it.
func (m *Marker) String() string {
	switch {
	case m.Header != "":
		return "header " + m.Header
	case m.Query != "":
		return "query parameter " + m.Query
	}
	return "body " + m.Pointer
}

// VariantDownstream is how the double answers the calls of a key sent
// with the variant: the route named, the behaviour for the key's token.
type VariantDownstream struct {
	Route string `yaml:"route" json:"route"`
	double.Behaviour
}

// downstreamRun is the double of a run.
type downstreamRun struct {
	srv *double.Server
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
	// then sees their keyless requests' executions too (countsKeyless).
	witnesses map[string]bool
}

// variantBody returns a copy of body, the body of variant name, that
// variantOf recognises. A nil d (no double) returns body.
func (d *downstreamRun) variantBody(body []byte, name string) []byte {
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

// variantOf is the variant whose body variantBody handed out as body (the
// same backing array), "" when none.
func (d *downstreamRun) variantOf(body []byte) string {
	if d == nil || len(body) == 0 {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.variants[&body[0]]
}

// StartDownstream starts the double of t.Downstream and returns a copy of
// t that marks its requests and counts with it (t itself and no server
// when t has no downstream:). The caller closes the server. Errors are one
// line (port in use: exit 2).
func StartDownstream(ctx context.Context, t *Target) (*Target, *double.Server, error) {
	if t.Downstream == nil {
		return t, nil, nil
	}
	srv, err := double.Start(ctx, *t.Downstream)
	if err != nil {
		return nil, nil, err
	}
	var salt [8]byte
	_, _ = rand.Read(salt[:])
	dt := *t
	dt.downstream = &downstreamRun{srv: srv, salt: hex.EncodeToString(salt[:])}
	for i := range t.Operations {
		if t.Operations[i].Marker == nil {
			dt.downstream.keys = true
		}
	}
	return &dt, srv, nil
}

// Double is the run's downstream double, nil when none is running.
func (t *Target) Double() *double.Server {
	if t.downstream == nil {
		return nil
	}
	return t.downstream.srv
}

// token is the token idemcheck writes into key's requests (a body, header
// or query marker): double.Prefix and a hash of the run's salt and key.
// "" when no double runs.
func (t *Target) token(key string) string {
	if t.downstream == nil {
		return ""
	}
	h := sha256.Sum256([]byte(t.downstream.salt + "\x00" + key))
	return double.Prefix + hex.EncodeToString(h[:(double.TokenLen-len(double.Prefix))/2])
}

// markForDouble writes into x (a request of op built from r) the token
// the downstream double counts it under, when a double runs: the key's,
// the key field lines' own scope's or the case's keyless scope's
// (countsKeyless); a variant's body gives the key the variant's behaviour.
// The scope is noted for the evidence (downstreamEvidence).
func (e *Env) markForDouble(op *Operation, r Req, x *Exchange) {
	t := e.Target
	if t.downstream == nil {
		return
	}
	var scope string
	switch {
	case r.KeyLines != nil:
		if !t.countsScopes() {
			return
		}
		scope = KeyLinesScope(r.KeyLines) // counted under it: linesCount
	case !r.NoKey:
		scope = r.Key
		if name := t.downstream.variantOf(x.Request.Body); name != "" {
			_ = t.BehaveVariant(op, r.Key, name) // the route was validated: no error
		}
	case t.countsKeyless(op):
		scope = e.noKeyScope()
	default:
		return
	}
	x.Request.URL, x.Request.Body = t.Mark(op, scope, x.Request.URL, x.Request.Header, x.Request.Body)
	e.sentUnder(scope)
}

// countsScopes reports whether the double counts the calls of requests
// sent without a key, or with raw key field lines, by a scope of their
// own: every oracle is a downstream one still counting per key and every
// operation has a marker, so such a request carries a token of its own
// (Env.noKeyScope, KeyLinesScope), not one of a key the server may or may
// not read from it. A per-key HTTP counter cannot count a keyless request
// at all.
func (t *Target) countsScopes() bool {
	d := t.downstream
	if d == nil || d.keys || d.global.Load() {
		return false
	}
	os := t.Oracles()
	for _, o := range os {
		if o.Downstream == "" {
			return false
		}
	}
	return len(os) > 0
}

// witness notes whether op's calibration request under key (counted once
// by the configured oracle) called the double with the key's token.
func (t *Target) witness(op *Operation, key string) {
	d := t.downstream
	if d == nil {
		return
	}
	seen := t.downstreamCalls(key, "") > 0
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.witnesses == nil {
		d.witnesses = map[string]bool{}
	}
	d.witnesses[op.Name] = seen
}

// countsKeyless reports whether the double counts the executions of op's
// requests sent without a key, by their case's own scope: as the oracle
// (countsScopes), or as a witness beside an oracle that cannot count them
// (a per-key SQL query or HTTP counter), once calibration saw op's
// execution call the double with its token.
func (t *Target) countsKeyless(op *Operation) bool {
	if t.countsScopes() {
		return true
	}
	d := t.downstream
	if d == nil || d.keys || d.global.Load() || op == nil || op.Marker == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.witnesses[op.Name]
}

// track makes the double count key's calls: those holding its token
// (returned), and those holding the key itself when an operation has no
// marker. A double must be running.
func (t *Target) track(key string) string {
	tok := t.token(key)
	t.downstream.srv.Track(tok)
	if t.downstream.keys {
		t.downstream.srv.Track(key)
	}
	return tok
}

// BehaveVariant makes the double answer key's calls as op's variant says
// (its downstream:), when a double runs and the variant has one.
func (t *Target) BehaveVariant(op *Operation, key, variant string) error {
	v, ok := op.Variants[variant]
	if t.downstream == nil || !ok || v.Downstream == nil || key == "" {
		return nil
	}
	tok := t.track(key)
	if op.Marker == nil {
		tok = key // the API forwards the key itself
	}
	return t.downstream.srv.Behave(tok, v.Downstream.Route, v.Downstream.Behaviour)
}

// downstreamCalls is how many calls of route hold key's token (or the
// key); exact, from the double's counts.
func (t *Target) downstreamCalls(key, route string) int {
	d := t.downstream
	if d == nil || key == "" {
		return 0
	}
	n := d.srv.Calls(t.token(key), route)
	if d.keys {
		n += d.srv.Calls(key, route)
	}
	return n
}

// downstreamJournal lists the kept calls that hold key's token or the key,
// oldest first.
func (t *Target) downstreamJournal(key string) []double.Call {
	d := t.downstream
	if d == nil || key == "" {
		return nil
	}
	calls := d.srv.Journal(t.token(key))
	if d.keys {
		calls = append(calls, d.srv.Journal(key)...)
		sort.SliceStable(calls, func(i, j int) bool { return calls[i].Time.Before(calls[j].Time) })
	}
	return calls
}

// validateDownstream checks the downstream parts of t: the double's
// config, the oracles' and variants' routes and the markers.
func (t *Target) validateDownstream() error {
	d := t.Downstream
	if d != nil {
		if err := d.Validate(); err != nil {
			return err
		}
	}
	if strings.Contains(t.Command, downstreamPlaceholder) && d == nil {
		return fmt.Errorf("target_cmd %q: %s is the downstream double's URL; add a downstream: section", t.Command, downstreamPlaceholder)
	}
	route := func(at, name string) error {
		if d == nil {
			return fmt.Errorf("%s %q: no downstream: section declares the double's routes", at, name)
		}
		if d.RouteIndex(name) < 0 {
			return fmt.Errorf("%s %q: no such route in downstream.routes (%s)", at, name, d.RouteNames())
		}
		return nil
	}
	if o := t.Oracle; o != nil && o.Downstream != "" {
		if err := route("oracle.downstream", o.Downstream); err != nil {
			return err
		}
	}
	for i, op := range t.Operations {
		at := fmt.Sprintf("operations[%d]", i)
		if o := op.Oracle; o != nil && o.Downstream != "" {
			if err := route(at+".oracle.downstream", o.Downstream); err != nil {
				return err
			}
		}
		for _, name := range slices.Sorted(maps.Keys(op.Variants)) {
			v := op.Variants[name]
			if v.Downstream == nil {
				continue
			}
			vat := at + ".variants." + name + ".downstream"
			if err := route(vat+".route", v.Downstream.Route); err != nil {
				return err
			}
			b := v.Downstream.Behaviour
			if b.Status != 0 && (b.Status < 100 || b.Status > 599) {
				return fmt.Errorf("%s.status %d: not an HTTP status", vat, b.Status)
			}
			if b.Delay < 0 {
				return fmt.Errorf("%s.delay %s: must not be negative", vat, b.Delay)
			}
			if name == VariantSlow && b.Delay < v.Duration && !b.Hang {
				return fmt.Errorf("%s.delay %s: shorter than the variant's duration %s (the call stays in flight as long as the provider holds it)", vat, b.Delay, v.Duration)
			}
		}
		if err := op.validateMarker(at, d != nil); err != nil {
			return err
		}
	}
	return nil
}

func (op *Operation) validateMarker(at string, haveDouble bool) error {
	m := op.Marker
	if m == nil {
		return nil
	}
	at += ".marker"
	set := 0
	for _, s := range []string{m.Pointer, m.Header, m.Query} {
		if s != "" {
			set++
		}
	}
	switch {
	case set != 1:
		return fmt.Errorf("%s: want one of a body pointer (/reference), {header: NAME} or {query: NAME}", at)
	case !haveDouble:
		return fmt.Errorf("%s: a marker is for the downstream double; add a downstream: section", at)
	case m.Header != "" && strings.ContainsAny(m.Header, " \t:\"(),/;<=>?@[\\]{}"):
		return fmt.Errorf("%s.header %q: want an HTTP header name", at, m.Header)
	case m.Query != "" && strings.ContainsAny(m.Query, "&=#? "):
		return fmt.Errorf("%s.query %q: want a query parameter name", at, m.Query)
	case m.Pointer != "":
		if _, err := jsonx.ParsePointer(m.Pointer); err != nil {
			return fmt.Errorf("%s %q: %v", at, m.Pointer, err)
		}
		if _, ok := jsonx.Replace(op.Body, m.Pointer, []byte(`""`)); !ok {
			return fmt.Errorf("%s %q: nothing at this pointer in the operation's body (give the member a placeholder, e.g. reference: \"\")", at, m.Pointer)
		}
	}
	return nil
}

// LoadDownstream reads the downstream: section of a config file (the rest
// of the file is not read), for a double started on its own (idemcheck
// double). Errors are one line naming the file and the field.
func LoadDownstream(path string) (*double.Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("config %s: %v", path, yamlError(err))
	}
	n, ok := doc["downstream"]
	if !ok {
		return nil, fmt.Errorf("config %s: downstream: no such section (it declares the double's listen address and routes)", path)
	}
	// Re-encoded to decode it strictly: a misspelt field is an error.
	section, err := yaml.Marshal(&n)
	if err != nil {
		return nil, fmt.Errorf("config %s: downstream: %v", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(section))
	dec.KnownFields(true)
	var cfg double.Config
	if err := dec.Decode(&cfg); err != nil {
		// Line numbers of the re-encoded section would mislead: drop them.
		msg := yamlError(err).Error()
		if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "line ") && i > 0 {
			msg = msg[i+2:]
		}
		return nil, fmt.Errorf("config %s: downstream: %s", path, msg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config %s: %v", path, err)
	}
	return &cfg, nil
}

// closeDouble stops a run's double, waiting at most a few seconds for
// calls it holds back (they are cut at once; see double.Server.Close).
func closeDouble(s *double.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Close(ctx)
}

// downstreamUntokened is how many calls of op's downstream oracle route
// held no token so far (0 without one).
func (t *Target) downstreamUntokened(op *Operation) int {
	o := t.OracleOf(op)
	if o == nil || o.Downstream == "" || t.downstream == nil {
		return 0
	}
	return t.downstream.srv.Untokened(o.Downstream)
}

// downstreamGlobal is calibration's verdict when op's request under a
// fresh key made n calls that hold no token: with one, the double counts
// every call of the route and the run goes serial (a note says why and
// how to avoid it); with more, nothing can be counted (a problem).
func (t *Target) downstreamGlobal(op *Operation, n int) (problem, note string) {
	route := t.OracleOf(op).Downstream
	fix := "set marker: on the operation (a body member, header or query parameter the API passes on to its provider)"
	if op.Marker != nil {
		fix = fmt.Sprintf("the API does not pass its marker (%s) on to its provider", op.Marker)
	}
	if n > 1 {
		return fmt.Sprintf("downstream %s: one request to %s %s under a fresh key made %d calls and none holds its token (%s); effect-counting cases are inconclusive", route, op.Method, op.Path, n, fix), ""
	}
	for _, o := range t.Oracles() {
		if o.Downstream == "" { // a per-key source beside it has no global count to read
			return fmt.Sprintf("downstream %s: the call %s %s made under a fresh key holds no token, and beside the per-key %s it cannot count globally (%s); effect-counting cases are inconclusive", route, op.Method, op.Path, o, fix), ""
		}
	}
	t.downstream.global.Store(true)
	behaves := ""
	for _, v := range op.Variants {
		if v.Downstream != nil {
			behaves = "; the variants' downstream: behaviours follow the token too, so the cases needing them are inconclusive"
		}
	}
	return "", fmt.Sprintf("downstream %s: the call %s %s made under a fresh key holds no token, so the route's calls are counted globally and the run is serial (%s)%s", route, op.Method, op.Path, fix, behaves)
}

// downstreamEvidence is the case's downstream calls, per key it sent:
// "downstream payments: 2 calls for key …3f2a, at +3 ms (200) and
// +1,212 ms (200)". Keys without calls are left out.
func (e *Env) downstreamEvidence() []string {
	t := e.Target
	if t.downstream == nil {
		return nil
	}
	var out []string
	for _, s := range e.sentKeys() {
		byRoute := map[string][]double.Call{}
		var routes []string
		for _, c := range t.downstreamJournal(s.key) {
			if byRoute[c.Route] == nil {
				routes = append(routes, c.Route)
			}
			byRoute[c.Route] = append(byRoute[c.Route], c)
		}
		for _, route := range routes {
			calls := byRoute[route]
			if route == "" {
				route = "(no route)"
			}
			name := "key " + shortKey(s.key)
			switch {
			case strings.HasPrefix(s.key, "no-key-"):
				name = "the requests without a key"
			case strings.HasPrefix(s.key, KeyLinesScope(nil)):
				name = fmt.Sprintf("the key field lines %q", strings.Split(strings.TrimPrefix(s.key, KeyLinesScope(nil)), "\n"))
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
				at = append(at, fmt.Sprintf("+%s ms (%s)", thousands(c.Time.Sub(s.first).Milliseconds()), answer))
			}
			noun := "calls"
			if len(calls) == 1 {
				noun = "call"
			}
			out = append(out, fmt.Sprintf("downstream %s: %d %s for %s, at %s", route, len(calls), noun, name, joinAnd(at)))
		}
	}
	return out
}

// maxCallsShown bounds the calls one evidence line times (a same-key
// burst against a broken API makes dozens).
const maxCallsShown = 8

// shortKey is a key's last 8 characters, enough to tell a case's keys
// apart in one line.
func shortKey(k string) string {
	if len(k) <= 12 {
		return k
	}
	return "…" + k[len(k)-8:]
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

// CheckDownstream is calibration for the faces that do not run the
// catalog (chaos, load): when a downstream oracle counts, one normal
// request of its operation under a fresh key must make one call holding
// the key's token. It returns "" when so (or when no downstream oracle
// counts); else a one-line note, and ok says whether the double can still
// count: untokened calls make it count globally (as in a run), no call at
// all leaves nothing to count with.
func CheckDownstream(ctx context.Context, t *Target, c *http.Client) (note string, ok bool) {
	var op *Operation
	for i := range t.Operations {
		if o := t.OracleOf(&t.Operations[i]); o != nil && o.Downstream != "" && t.downstream != nil {
			op = &t.Operations[i]
			break
		}
	}
	if op == nil {
		return "", true
	}
	ctx, cancel := context.WithTimeout(ctx, 2*t.Timeout+calibrationWait)
	defer cancel()
	e := &Env{Target: t, Op: op, client: c, ctx: ctx}
	k := uuid.NewString()
	route := t.OracleOf(op).Downstream
	untokened := t.downstreamUntokened(op)
	r := e.Send(ctx, Req{Label: "double check", Key: k})
	if !r.OK() {
		return fmt.Sprintf("downstream %s: the normal call answered %s, so the double could not be checked; its counts are not used", route, r.String()), false
	}
	deadline := time.Now().Add(calibrationWait)
	for {
		switch n, u := t.downstreamCalls(k, route), t.downstreamUntokened(op)-untokened; {
		case n == 1:
			return "", true
		case n > 1:
			return fmt.Sprintf("downstream %s: one request under a fresh key made %d calls holding its token; its counts are not used", route, n), false
		case u > 0:
			problem, note := t.downstreamGlobal(op, u)
			if problem != "" {
				return problem, false
			}
			return note, true
		case time.Now().After(deadline) || ctx.Err() != nil:
			return fmt.Sprintf("downstream %s: a %d answer to %s %s under a fresh key made no call to the double at %s within %s: point the API's provider URL at it; its counts are not used", route, r.Status, op.Method, op.Path, t.Double().URL(), calibrationWait), false
		}
		if waitUntil(ctx, time.Now().Add(50*time.Millisecond)) != nil {
			continue // the deadline case reports it
		}
	}
}

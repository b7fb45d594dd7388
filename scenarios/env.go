package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// maxBody bounds what a response may make us buffer.
const maxBody = 4 << 20

// Env is one case instance's view of the target: it sends requests, samples
// the oracle and keeps every exchange as evidence.
type Env struct {
	Target  *Target
	Profile *Profile
	// Op is the operation under test (the first one for cases that are not
	// per operation).
	Op   *Operation
	Case Case

	client *http.Client
	// oracleBase is subtracted from a global (not per-key) counter.
	oracleBase int

	mu        sync.Mutex
	exchanges []Exchange
}

// Req describes one request of a case. Zero values mean "the normal call".
type Req struct {
	Label string
	// Key is the idempotency key, written in the target's syntax.
	Key string
	// NoKey sends no key header at all.
	NoKey bool
	// KeyLines, when set, are sent verbatim as key header lines (malformed
	// and repeated-header probes); Key is then ignored.
	KeyLines []string
	// Principal indexes Target.Principals; -1 sends no credentials.
	Principal int
	// Body replaces the operation's body (see Env.Body).
	Body json.RawMessage
	// Op replaces Env.Op (scope cases); Method and Path override further.
	Op     *Operation
	Method string
	Path   string
	// client replaces the run's shared client (bursts use warmed ones).
	client *http.Client
}

// Resp is what came back for one Req.
type Resp struct {
	Status int
	Header http.Header
	Body   []byte
	Err    error
	// Start is when the request was sent; End when the body was read.
	Start, End time.Time
}

// OK reports a 2xx response.
func (r Resp) OK() bool { return r.Err == nil && r.Status >= 200 && r.Status < 300 }

// Is4xx reports a 4xx response.
func (r Resp) Is4xx() bool { return r.Err == nil && r.Status >= 400 && r.Status < 500 }

// Is5xx reports a 5xx response.
func (r Resp) Is5xx() bool { return r.Err == nil && r.Status >= 500 }

// String is a short description for Observed texts.
func (r Resp) String() string {
	if r.Err != nil {
		return "transport error: " + r.Err.Error()
	}
	s := fmt.Sprintf("%d", r.Status)
	if len(r.Body) > 0 {
		b := r.Body
		if len(b) > 160 {
			b = append(append([]byte(nil), b[:160]...), "..."...)
		}
		s += " " + strings.TrimSpace(string(b))
	}
	return s
}

// NewKey returns a fresh key, unique so nothing collides across runs: a
// UUID, or the profile's key_format.
func (e *Env) NewKey() string {
	if e.Profile == nil {
		return uuid.NewString()
	}
	return e.Profile.NewKey()
}

// KeyValue writes key as the target sends it: an RFC 9651 sf-string, or raw.
func (e *Env) KeyValue(key string) string {
	if e.Target.KeySyntax == Raw {
		return key
	}
	v, err := httpsfv.Marshal(httpsfv.NewItem(key))
	if err != nil { // only non-ASCII keys fail; send them raw so the server decides
		return key
	}
	return v
}

// Body returns the operation's body with the merge patches applied in order.
func (e *Env) Body(patches ...json.RawMessage) json.RawMessage {
	b := e.Op.Body
	for _, p := range patches {
		if len(p) == 0 {
			continue
		}
		merged, err := jsonx.MergePatch(b, p)
		if err != nil { // config validation guarantees objects; keep the body
			continue
		}
		b = merged
	}
	return b
}

// Variant returns the body of a configured variant of the operation.
func (e *Env) Variant(name string) (json.RawMessage, Variant, bool) {
	return e.Op.VariantBody(name)
}

// Send performs one request and records it as evidence.
func (e *Env) Send(ctx context.Context, r Req) Resp {
	op := e.Op
	if r.Op != nil {
		op = r.Op
	}
	method, path := op.Method, op.Path
	if r.Method != "" {
		method = r.Method
	}
	if r.Path != "" {
		path = r.Path
	}
	body := r.Body
	if body == nil {
		body = op.Body
	}
	x := Exchange{Label: r.Label, Request: ExchangeRequest{Method: method, URL: e.Target.BaseURL + path, Header: http.Header{}, Body: body}}
	for k, v := range op.Headers {
		x.Request.Header.Set(k, v)
	}
	if len(body) > 0 && x.Request.Header.Get("Content-Type") == "" {
		x.Request.Header.Set("Content-Type", "application/json")
	}
	if r.Principal >= 0 && r.Principal < len(e.Target.Principals) {
		for k, v := range e.Target.Principals[r.Principal].Headers {
			x.Request.Header.Set(k, v)
		}
	}
	hk := http.CanonicalHeaderKey(e.Target.KeyHeader)
	switch {
	case r.KeyLines != nil:
		x.Request.Header[hk] = append([]string(nil), r.KeyLines...)
	case !r.NoKey:
		x.Request.Header[hk] = []string{e.KeyValue(r.Key)}
	}
	if r.client != nil {
		return e.doWith(ctx, r.client, x, true)
	}
	return e.do(ctx, x, true)
}

// do sends x.Request, fills in the response and, if record, keeps x as
// evidence.
func (e *Env) do(ctx context.Context, x Exchange, record bool) Resp {
	return e.doWith(ctx, e.client, x, record)
}

func (e *Env) doWith(ctx context.Context, client *http.Client, x Exchange, record bool) Resp {
	var rd io.Reader
	if len(x.Request.Body) > 0 {
		rd = bytes.NewReader(x.Request.Body)
	}
	req, err := http.NewRequestWithContext(ctx, x.Request.Method, x.Request.URL, rd)
	var resp Resp
	if err == nil {
		req.Header = x.Request.Header.Clone()
		x.Start = time.Now()
		resp.Start = x.Start
		var hr *http.Response
		hr, err = client.Do(req)
		if err == nil {
			var b []byte
			b, err = io.ReadAll(io.LimitReader(hr.Body, maxBody))
			hr.Body.Close()
			resp.Status, resp.Header, resp.Body = hr.StatusCode, hr.Header, b
			x.Response = &ExchangeResponse{Status: hr.StatusCode, Header: hr.Header, Body: b}
		}
		resp.End = time.Now()
		x.Duration = resp.End.Sub(x.Start)
	}
	if err != nil {
		resp.Err = err
		x.Error = err.Error()
	}
	if record {
		e.mu.Lock()
		e.exchanges = append(e.exchanges, x)
		e.mu.Unlock()
	}
	return resp
}

// warmClient returns a client holding up to n open connections to the
// target, so that a barrier-released burst is not serialised by dialing
// (trap C13). The caller closes its idle connections when done.
func (e *Env) warmClient(ctx context.Context, n int) *http.Client {
	c := &http.Client{Transport: NewTransport(n), Timeout: e.client.Timeout, CheckRedirect: e.client.CheckRedirect}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.Target.BaseURL+"/", nil)
			if err != nil {
				return
			}
			if resp, err := c.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	close(start)
	wg.Wait()
	return c
}

// HasOracle reports whether executions can be counted by the probe.
func (e *Env) HasOracle() bool { return e.Target.Oracle != nil }

// Executions samples the oracle: how many times the handler ran for key.
func (e *Env) Executions(ctx context.Context, key string) (int, error) {
	o := e.Target.Oracle
	if o == nil {
		return 0, fmt.Errorf("no oracle configured")
	}
	n, err := e.sampleOracle(ctx, key, true)
	return n - e.oracleBase, err
}

// sampleOracle reads the counter; polling loops pass record=false so the
// evidence is not flooded.
func (e *Env) sampleOracle(ctx context.Context, key string, record bool) (int, error) {
	o := e.Target.Oracle
	x := Exchange{Label: "oracle", Request: ExchangeRequest{Method: http.MethodGet, URL: o.KeyURL(e.Target, key), Header: o.Header(e.Target)}}
	r := e.do(ctx, x, record)
	if r.Err != nil {
		return 0, fmt.Errorf("oracle: %v", r.Err)
	}
	n, err := o.ParseCount(r.Status, r.Body)
	if err != nil {
		return 0, fmt.Errorf("oracle: %v", err)
	}
	return n, nil
}

// CreatedID returns the created resource id in r ("" if none or no pointer).
func (e *Env) CreatedID(r Resp) string { return createdIDOf(e.Op, r) }

// createdIDOf is CreatedID for a response of operation op (scope cases
// compare responses of two operations).
func createdIDOf(op *Operation, r Resp) string {
	if op.IDPointer == "" || !r.OK() {
		return ""
	}
	doc, err := decodeJSON(r.Body)
	if err != nil {
		return ""
	}
	v, ok := jsonx.Pointer(doc, op.IDPointer)
	if !ok || v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// Effects counts the executions caused under key. With an oracle the count
// is exact; otherwise the distinct created ids among rs are a lower bound
// (identity oracle). ok is false when neither is available.
func (e *Env) Effects(ctx context.Context, key string, rs ...Resp) (n int, how string, ok bool, err error) {
	if e.HasOracle() {
		n, err = e.Executions(ctx, key)
		return n, "oracle", err == nil, err
	}
	if e.Op.IDPointer == "" {
		return 0, "", false, nil
	}
	return len(e.DistinctIDs(rs...)), "distinct created ids", true, nil
}

// DistinctIDs lists the distinct created ids among rs, sorted.
func (e *Env) DistinctIDs(rs ...Resp) []string {
	set := map[string]bool{}
	for _, r := range rs {
		if id := e.CreatedID(r); id != "" {
			set[id] = true
		}
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Exchanges returns the evidence recorded so far.
func (e *Env) Exchanges() []Exchange {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Exchange(nil), e.exchanges...)
}

// Curl returns a copy-pasteable curl command reproducing the request.
func (x Exchange) Curl() string {
	var b strings.Builder
	b.WriteString("curl -i -X " + x.Request.Method + " " + shellQuote(x.Request.URL))
	keys := make([]string, 0, len(x.Request.Header))
	for k := range x.Request.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range x.Request.Header[k] {
			if v == "" { // curl drops "Name:" but sends "Name;" as an empty header
				b.WriteString(" -H " + shellQuote(k+";"))
				continue
			}
			b.WriteString(" -H " + shellQuote(k+": "+v))
		}
	}
	if len(x.Request.Body) > 0 {
		b.WriteString(" --data-binary " + shellQuote(string(x.Request.Body)))
	}
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// WithinTTL reports whether every retry was sent within TTL − margin of
// orig's start: the server then looked the key up while its record must
// still exist, however it counts its TTL (from the claim at the earliest).
// The send time is what matters, not the answer's: a retry that executed
// the slow variant again answers late, yet was judged by the server early.
// The margin absorbs transit delays. Always true when no TTL is declared.
func (e *Env) WithinTTL(orig Resp, retries ...Resp) bool {
	ttl := e.Target.TTL
	if ttl <= 0 {
		return true
	}
	for _, r := range retries {
		if r.Start.Sub(orig.Start) > ttl-e.Profile.Margin {
			return false
		}
	}
	return true
}

// inTTL is v for a case that expects retries to replay orig, unless v
// judges against them (Fail, Warn) and one was sent outside the WithinTTL
// window: the record may then have legally expired (a stall on the way),
// so the verdict is Inconclusive. A replay seen late is still a replay, so
// passes stand.
func (e *Env) inTTL(v Verdict, orig Resp, retries ...Resp) Verdict {
	if (v.Status != Fail && v.Status != Warn) || e.WithinTTL(orig, retries...) {
		return v
	}
	last := orig.Start
	for _, r := range retries {
		if r.Start.After(last) {
			last = r.Start
		}
	}
	return e.Inconclusive(fmt.Sprintf("a stall: the retry was sent %s after the original started, past TTL %s − margin %s, so the key may legally have expired (would have been %s: expected %s, observed %s)",
		last.Sub(orig.Start).Round(time.Millisecond), e.Target.TTL, e.Profile.Margin, v.Status, v.Expected, v.Observed))
}

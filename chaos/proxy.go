package chaos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// FaultHeader labels every response the proxy answers under a fault.
const FaultHeader = "Idemcheck-Fault"

// Options configure a Proxy.
type Options struct {
	// Upstream is the base URL requests are forwarded to.
	Upstream string
	// Replicas are more base URLs of the same API (replicas on one
	// store): attempts go to Upstream and them in turn, so a key's retries
	// land on different replicas.
	Replicas []string
	// KeyHeader names the idempotency key header (default Idempotency-Key).
	KeyHeader string
	// IDPointer is the RFC 6901 pointer to the created id in a response
	// body (default /id); the history records it for the checker.
	IDPointer string
	// Transport sends upstream requests; nil means the proxy's own
	// HTTP/1.1 keep-alive pool (upstream.go: no goroutine hand-offs, never
	// re-sends). Requests are built so that net/http never replays them
	// (no GetBody), whatever the Transport; Close closes its idle
	// connections when it can.
	Transport http.RoundTripper
	// History receives one line per attempt; nil records nothing.
	History *History
	// Seed makes the probability draws reproducible for a given arrival
	// order of requests.
	Seed uint64
	// MaxBody bounds request and response bodies (default 8 MiB).
	MaxBody int64
	// Timeout bounds one upstream exchange (default 60s).
	Timeout time.Duration
	// TLS configures the proxy's own upstream pool for an https upstream
	// (nil: system roots); a given Transport brings its own.
	TLS *tls.Config
	// MaxKeys bounds the keys whose attempt numbers are remembered
	// (default 262144). Past it the oldest generation of keys is
	// forgotten, so a long-running proxy's memory stays bounded; a key
	// forgotten that way starts again at attempt 1.
	MaxKeys int
}

// Proxy is the fault-injecting reverse proxy (an http.Handler).
type Proxy struct {
	opts      Options
	upstreams []*url.URL    // Upstream, then Replicas
	next      atomic.Uint64 // the upstream of the next attempt

	inflight sync.WaitGroup // attempts being handled, hijacked ones included

	mu       sync.Mutex
	rules    []*Rule
	nextRule int
	rng      *rand.Rand
	attempts attemptCounts
	counters Counters
}

// Counters are what the proxy has done since start or the last reset.
type Counters struct {
	Requests       int64            `json:"requests"`
	Forwarded      int64            `json:"forwarded"`
	UpstreamErrors int64            `json:"upstream_errors"`
	Faults         map[string]int64 `json:"faults"`
}

// New returns a proxy in front of o.Upstream.
func New(o Options) (*Proxy, error) {
	u, err := url.Parse(o.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream %q: want an absolute http(s) URL", o.Upstream)
	}
	if o.KeyHeader == "" {
		o.KeyHeader = "Idempotency-Key"
	}
	if o.IDPointer == "" {
		o.IDPointer = "/id"
	}
	if _, err := jsonx.ParsePointer(o.IDPointer); err != nil {
		return nil, fmt.Errorf("id pointer %q: %v", o.IDPointer, err)
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 8 << 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = 1 << 18
	}
	p := &Proxy{opts: o, upstreams: []*url.URL{u}, attempts: newAttemptCounts(o.MaxKeys)}
	for _, r := range o.Replicas {
		ru, err := url.Parse(r)
		if err != nil || (ru.Scheme != "http" && ru.Scheme != "https") || ru.Host == "" {
			return nil, fmt.Errorf("replica %q: want an absolute http(s) URL", r)
		}
		p.upstreams = append(p.upstreams, ru)
	}
	if o.Transport == nil {
		p.opts.Transport = newPools(p.upstreams, o.TLS)
	}
	p.rng = rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	p.counters.Faults = map[string]int64{}
	return p, nil
}

// Close waits for attempts in progress (their history lines included;
// each is bounded by Options.Timeout) and releases idle upstream
// connections. Stop the listener first.
func (p *Proxy) Close() {
	p.inflight.Wait()
	if c, ok := p.opts.Transport.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// AddRule parses spec and appends it; rules are tried in order and the
// first one selected handles the attempt.
func (p *Proxy) AddRule(spec string) (Rule, error) {
	r, err := ParseRule(spec)
	if err != nil {
		return Rule{}, err
	}
	return p.Add(*r), nil
}

// Add appends a copy of a parsed rule (ParseRule, ParseRules) and returns
// it with its ID; rules hold no state, so one parsed rule may be added to
// several proxies.
func (p *Proxy) Add(r Rule) Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextRule++
	r.ID = strconv.Itoa(p.nextRule)
	p.rules = append(p.rules, &r)
	return r
}

// Rules lists the active rules.
func (p *Proxy) Rules() []Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Rule, len(p.rules))
	for i, r := range p.rules {
		out[i] = *r
	}
	return out
}

// RemoveRule deletes the rule with id; false when there is none.
func (p *Proxy) RemoveRule(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.rules {
		if r.ID == id {
			p.rules = append(p.rules[:i], p.rules[i+1:]...)
			return true
		}
	}
	return false
}

// Reset removes every rule and forgets attempt numbers and counters.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
	p.attempts = newAttemptCounts(p.opts.MaxKeys)
	p.counters = Counters{Faults: map[string]int64{}}
}

// Counters returns a snapshot of the counters.
func (p *Proxy) Counters() Counters {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counters
	c.Faults = make(map[string]int64, len(p.counters.Faults))
	for k, v := range p.counters.Faults {
		c.Faults[k] = v
	}
	return c
}

// pick numbers the attempt and chooses the fault for it (nil: none).
func (p *Proxy) pick(r *http.Request, key string) (int, *Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counters.Requests++
	attempt := 0
	if key != "" {
		attempt = p.attempts.next(key)
	}
	for _, rule := range p.rules {
		if !rule.Select.matches(r, attempt) {
			continue
		}
		if rule.Select.P >= 1 || p.rng.Float64() < rule.Select.P {
			p.counters.Faults[rule.Kind]++
			return attempt, rule
		}
	}
	return attempt, nil
}

func (p *Proxy) count(forwarded, failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if forwarded {
		p.counters.Forwarded++
	}
	if failed {
		p.counters.UpstreamErrors++
	}
}

// ServeHTTP handles one client attempt.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.handle(w, r) }

// clientWatcher is a ResponseWriter whose request context does not end
// when the client goes away unless asked (the proxy's own loop: watching
// costs a goroutine, so only faults get it).
type clientWatcher interface {
	watchClient(r *http.Request) (*http.Request, func())
}

// handle runs one attempt for either server.
func (p *Proxy) handle(w http.ResponseWriter, r *http.Request) {
	p.inflight.Add(1)
	defer p.inflight.Done()
	start := time.Now()
	body, err := readAll(r.Body, r.ContentLength, p.opts.MaxBody)
	key := unquoteKey(r.Header.Get(p.opts.KeyHeader))
	attempt, rule := p.pick(r, key)
	x := &Exchange{w: w, r: r, p: p, Body: body, ev: Event{
		Type: "attempt", Time: start.UTC(), Key: key, Attempt: attempt,
		Method: r.Method, Path: r.URL.Path,
	}}
	if p.opts.History != nil {
		x.ev.RequestSHA256 = digest(body)
	}
	// Written even when an abort unwinds the handler with a panic.
	defer func() {
		x.ev.DurationNS = time.Since(start).Nanoseconds()
		p.opts.History.write(&x.ev)
		x.release()
	}()
	switch {
	case err != nil:
		x.answer(http.StatusBadRequest, "proxy", "reading the request body: "+err.Error())
		return
	case int64(len(body)) > p.opts.MaxBody:
		x.answer(http.StatusRequestEntityTooLarge, "", "request body exceeds the proxy's limit")
		return
	}
	if rule == nil {
		x.Respond(x.Forward(body))
		return
	}
	x.ev.Fault, x.ev.Rule = rule.Kind, rule.ID
	if cw, ok := w.(clientWatcher); ok {
		var stop func()
		x.r, stop = cw.watchClient(r)
		defer stop()
	}
	rule.fault.Serve(x)
}

// readAll reads a request body of up to limit+1 bytes (one more than
// allowed, so the caller can tell "too large"), sized by the declared
// length: a body of known length takes one allocation.
// Request bodies are not pooled: a Transport may still read a forwarded
// body after RoundTrip returned.
func readAll(r io.Reader, declared, limit int64) ([]byte, error) {
	n := declared
	if n < 0 || n > limit {
		n = 512
	}
	buf := make([]byte, 0, n+1)
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := buf[len(buf):min(int64(cap(buf)), limit+1)]
		m, err := r.Read(room)
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// unquoteKey turns an sf-string key ("abc") into its value; raw keys pass.
func unquoteKey(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
		if strings.IndexByte(v, '\\') >= 0 {
			v = sfUnescape.Replace(v)
		}
	}
	return v
}

var sfUnescape = strings.NewReplacer(`\\`, `\`, `\"`, `"`)

// hopHeaders are connection-scoped and never forwarded (RFC 9110 §7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forwardHeader is h without hop-by-hop headers: h itself when it has
// none (forwarded requests only read it), else a copy.
func forwardHeader(h http.Header) http.Header {
	for _, k := range hopHeaders {
		if _, ok := h[k]; ok {
			out := make(http.Header, len(h))
			copyHeader(out, h)
			return out
		}
	}
	return h
}

func copyHeader(dst, src http.Header) {
	for k, vv := range src {
		dst[k] = append(dst[k][:0:0], vv...)
	}
	for _, h := range hopHeaders {
		dst.Del(h)
	}
}

// upstreamRequest builds the forwarded request. Its body is a plain
// io.ReadCloser with no GetBody, so net/http never re-sends it on its own
// (it would for a request carrying Idempotency-Key otherwise).
func (p *Proxy) upstreamRequest(ctx context.Context, r *http.Request, body []byte) *http.Request {
	up := p.upstreams[0]
	if len(p.upstreams) > 1 {
		up = p.upstreams[(p.next.Add(1)-1)%uint64(len(p.upstreams))]
	}
	u := *up
	u.Path = strings.TrimRight(up.Path, "/") + r.URL.Path
	u.RawPath = ""
	u.RawQuery = r.URL.RawQuery
	out := &http.Request{
		Method: r.Method, URL: &u, Host: u.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: forwardHeader(r.Header), ContentLength: int64(len(body)),
	}
	if len(body) > 0 {
		out.Body = onceBody{bytes.NewReader(body)}
	}
	return out.WithContext(ctx)
}

type onceBody struct{ *bytes.Reader }

func (onceBody) Close() error { return nil }

// Upstream is one forwarded copy's result as the proxy saw it.
type Upstream struct {
	// SentNS is when this copy was sent upstream, in nanoseconds after
	// the attempt's time: a delay fault or a slow body read holds it.
	SentNS int64  `json:"sent_ns,omitempty"`
	Status int    `json:"status,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	ID     string `json:"id,omitempty"`
	Error  string `json:"error,omitempty"`
	header http.Header
	body   []byte
	buf    *bytes.Buffer // pooled storage of body, released after the attempt
}

// errUpstreamBody marks a response whose body exceeded the limit.
var errUpstreamBody = errors.New("upstream response body exceeds the proxy's limit")

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
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// FaultHeader labels every response the proxy answers under a fault.
const FaultHeader = "Idemcheck-Fault"

// options are a Proxy's settings, as its Options set them; New fills the
// defaults.
type options struct {
	replicas  []string
	keyHeader string
	idPointer string
	// markOf, when set, reads a 2xx answer's id under a key instead of
	// idPointer (WithMarks).
	markOf    func(key string, body []byte) string
	transport http.RoundTripper
	history   *History
	seed      uint64
	maxBody   int64
	timeout   time.Duration
	tls       *tls.Config
	maxKeys   int
	// keyOf, when set, reads the key from a request (a key in the body:
	// JSON, GraphQL, JSON-RPC) instead of keyHeader.
	keyOf func(h http.Header, body []byte) string
	// A gRPC proxy's (grpc.go).
	keyField string
	resolve  Resolver
	methods  []string
}

// Option configures a Proxy (New).
type Option func(*options)

// WithReplicas adds base URLs of the same API (replicas on one store):
// attempts go to the upstream and them in turn, so a key's retries land
// on different replicas. A gRPC proxy's are grpc:// or grpcs:// URLs.
func WithReplicas(urls ...string) Option {
	return func(o *options) { o.replicas = append(o.replicas, urls...) }
}

// WithKeyHeader names the idempotency key header (default
// Idempotency-Key).
func WithKeyHeader(name string) Option { return func(o *options) { o.keyHeader = name } }

// WithKeyOf reads each request's key with f, given its header and body,
// instead of the key header: an API that keeps its key in the body.
// Every request then takes the parsing path (the byte pump reads only
// heads).
func WithKeyOf(f func(h http.Header, body []byte) string) Option {
	return func(o *options) { o.keyOf = f }
}

// WithIDPointer is the RFC 6901 pointer to the created id in a response
// body (default /id); the history records it for the checker.
func WithIDPointer(ptr string) Option { return func(o *options) { o.idPointer = ptr } }

// WithMarks reads the id the history records for a 2xx answer under a key
// with mark (the key's operation's own pointer; "" when that operation's
// answers carry none) instead of one pointer for every operation.
func WithMarks(mark func(key string, body []byte) string) Option {
	return func(o *options) { o.markOf = mark }
}

// idOf is the id the history records for body, a 2xx answer under key.
func (o *options) idOf(key string, body []byte) string {
	if o.markOf != nil {
		return o.markOf(key, body)
	}
	return jsonx.PointerText(body, o.idPointer)
}

// WithTransport sends upstream requests through rt instead of the
// proxy's own HTTP/1.1 keep-alive pool (upstream.go: no goroutine
// hand-offs, never re-sends). Requests are built so that net/http never
// replays them (no GetBody), whatever the transport; Close closes its
// idle connections when it can.
func WithTransport(rt http.RoundTripper) Option { return func(o *options) { o.transport = rt } }

// WithHistory records one line per attempt to h (default: nothing).
func WithHistory(h *History) Option { return func(o *options) { o.history = h } }

// WithSeed makes the probability draws reproducible for a given arrival
// order of requests (default 0).
func WithSeed(seed uint64) Option { return func(o *options) { o.seed = seed } }

// WithMaxBody bounds request and response bodies (default 8 MiB).
func WithMaxBody(n int64) Option { return func(o *options) { o.maxBody = n } }

// WithTimeout bounds one upstream exchange (default 60s).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithTLS configures the proxy's own upstream pool for an https upstream
// (default: the system roots); a WithTransport brings its own.
func WithTLS(c *tls.Config) Option { return func(o *options) { o.tls = c } }

// WithMaxKeys bounds the keys whose attempt numbers are remembered
// (default 262144). Past it the oldest generation of keys is forgotten,
// so a long-running proxy's memory stays bounded; a key forgotten that
// way starts again at attempt 1.
func WithMaxKeys(n int) Option { return func(o *options) { o.maxKeys = n } }

// Proxy is the fault-injecting reverse proxy (an http.Handler).
type Proxy struct {
	opts      options
	upstreams []*url.URL    // Upstream, then Replicas
	next      atomic.Uint64 // the upstream of the next attempt

	inflight sync.WaitGroup // attempts being handled, hijacked ones included

	ruleSet
}

// defaults fills what the options left out, as both proxies take them.
func (o *options) defaults() error {
	if o.keyHeader == "" {
		o.keyHeader = "Idempotency-Key"
	}
	if o.idPointer == "" {
		o.idPointer = "/id"
	}
	if _, err := jsonx.ParsePointer(o.idPointer); err != nil {
		return fmt.Errorf("id pointer %q: %v", o.idPointer, err)
	}
	if o.maxBody <= 0 {
		o.maxBody = 8 << 20
	}
	if o.timeout <= 0 {
		o.timeout = 60 * time.Second
	}
	if o.maxKeys <= 0 {
		o.maxKeys = 1 << 18
	}
	return nil
}

// New returns a proxy in front of upstream, the base URL requests are
// forwarded to.
func New(upstream string, opts ...Option) (*Proxy, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream %q: want an absolute http(s) URL", upstream)
	}
	if err := o.defaults(); err != nil {
		return nil, err
	}
	p := &Proxy{opts: o, upstreams: []*url.URL{u}, ruleSet: newRuleSet(o.seed, o.maxKeys)}
	for _, r := range o.replicas {
		ru, err := url.Parse(r)
		if err != nil || (ru.Scheme != "http" && ru.Scheme != "https") || ru.Host == "" {
			return nil, fmt.Errorf("replica %q: want an absolute http(s) URL", r)
		}
		p.upstreams = append(p.upstreams, ru)
	}
	if o.transport == nil {
		p.opts.transport = newPools(p.upstreams, o.tls)
	}
	return p, nil
}

// Close waits for attempts in progress (their history lines included;
// each is bounded by WithTimeout) and releases idle upstream
// connections. Stop the listener first.
func (p *Proxy) Close() {
	p.inflight.Wait()
	if c, ok := p.opts.transport.(interface{ CloseIdleConnections() }); ok {
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
func (p *Proxy) Add(r Rule) Rule { return p.add(r) }

// pick numbers the attempt and chooses the fault for it (nil: none).
func (p *Proxy) pick(r *http.Request, key string) (int, *Rule) {
	return p.draw(key, func(s *Select, attempt int) bool { return s.matches(r, attempt) })
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
	body, err := readAll(r.Body, r.ContentLength, p.opts.maxBody)
	key := unquoteKey(r.Header.Get(p.opts.keyHeader))
	if p.opts.keyOf != nil && err == nil {
		key = p.opts.keyOf(r.Header, body)
	}
	attempt, rule := p.pick(r, key)
	x := &Relay{w: w, r: r, p: p, Body: body, ev: Event{
		Type: "attempt", Time: start.UTC(), Key: key, Attempt: attempt,
		Method: r.Method, Path: r.URL.Path,
	}}
	if p.opts.history != nil {
		x.ev.RequestSHA256 = digest(body)
	}
	// Written even when an abort unwinds the handler with a panic.
	defer func() {
		x.ev.DurationNS = time.Since(start).Nanoseconds()
		p.opts.history.write(&x.ev)
		x.release()
	}()
	switch {
	case err != nil:
		x.answer(http.StatusBadRequest, "proxy", "reading the request body: "+err.Error())
		return
	case int64(len(body)) > p.opts.maxBody:
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
	SentNS int64 `json:"sent_ns,omitempty"`
	// Status is the HTTP status; a gRPC call's is the one google.rpc.Code
	// maps its code to, the code itself in GRPCCode (its name).
	Status   int    `json:"status,omitempty"`
	GRPCCode string `json:"grpc_code,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	ID       string `json:"id,omitempty"`
	Error    string `json:"error,omitempty"`
	header   http.Header
	body     []byte
	buf      *bytes.Buffer // pooled storage of body, released after the attempt
	call     *callAnswer   // a gRPC call's answer (GRPCProxy)
}

// errUpstreamBody marks a response whose body exceeded the limit.
var errUpstreamBody = errors.New("upstream response body exceeds the proxy's limit")

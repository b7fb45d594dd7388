package clientcheck

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// maxRequestBody bounds what one attempt may make the stand-in buffer.
const maxRequestBody = 1 << 20

// barrierWait bounds how long a parallel run's first requests wait for
// the others, so that they overlap: shorter than a client's timeout, so
// that a client whose pool sends one request at a time is only slowed
// (once: the barrier then stays open).
const barrierWait = 500 * time.Millisecond

// Server is the stand-in API: one loopback HTTP server whose runs each
// live under their own path prefix (Run.BaseURL).
type Server struct {
	target  *apispec.Target
	profile *apispec.Profile
	hold    time.Duration
	ln      net.Listener
	srv     *http.Server
	origin  string
	conns   atomic.Int64

	mu   sync.Mutex
	runs map[string]*Run
	seq  int
}

type connKey struct{}

// NewServer starts a stand-in for the operations of t, keys honoured
// under p; hold bounds how long the timeout fault holds an answer.
func NewServer(t *apispec.Target, p *apispec.Profile, hold time.Duration) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("stand-in: %w", err)
	}
	s := &Server{target: t, profile: p, hold: hold, ln: ln, runs: map[string]*Run{}, origin: "http://" + ln.Addr().String()}
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, s.conns.Add(1))
		},
	}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server and every run still open.
func (s *Server) Close() error {
	s.mu.Lock()
	runs := make([]*Run, 0, len(s.runs))
	for _, r := range s.runs {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	for _, r := range runs {
		r.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	return err
}

// NewRun opens a run of a case under plan: its own prefix, store and
// journal.
func (s *Server) NewRun(caseID string, plan Plan) *Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	name := strings.ReplaceAll(caseID, "/", "-") + "/" + strconv.Itoa(s.seq)
	r := &Run{journal: newJournal(caseID, plan), server: s, prefix: "/run/" + name, store: memstore.New()}
	opts := []reference.Option{reference.WithMaxBody(maxRequestBody)}
	if s.profile.KeyRequired == apispec.No {
		opts = append(opts, reference.WithKeyOptional())
	}
	r.handler = reference.Middleware(r.store, opts...)(http.HandlerFunc(r.execute))
	s.runs[r.prefix] = r
	return r
}

// ServeHTTP routes a request to its run by prefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	path := req.URL.Path
	var r *Run
	if strings.HasPrefix(path, "/run/") {
		if i := strings.IndexByte(path[len("/run/"):], '/'); i >= 0 {
			if j := strings.IndexByte(path[len("/run/")+i+1:], '/'); j >= 0 {
				prefix := path[:len("/run/")+i+1+j]
				s.mu.Lock()
				r = s.runs[prefix]
				s.mu.Unlock()
			} else {
				s.mu.Lock()
				r = s.runs[path]
				s.mu.Unlock()
			}
		}
	}
	if r == nil {
		problem(w, http.StatusNotFound, "unknown-run", "No such case run", "This path belongs to no open case run: use IDEMCHECK_BASE_URL as given.", 0)
		return
	}
	r.serve(w, req)
}

// Plan is what a case run asks of the client and of the stand-in.
type Plan struct {
	// Calls logical calls one after another, or Parallel at once.
	Calls, Parallel int
	Fault           Fault
	// Limit, when set, is the most attempts the run lets the client make:
	// one more closes Overflow, and the runner stops the client.
	Limit int
}

// Logical is how many logical calls the plan asks for.
func (p Plan) Logical() int { return max(p.Calls, 1) * max(p.Parallel, 1) }

// FaultKind is what the stand-in does to an attempt.
type FaultKind string

const (
	// NoFault answers as a correct server.
	NoFault FaultKind = ""
	// Drop commits the call, then closes the connection without an
	// answer (Mode "rst": a reset).
	Drop FaultKind = "drop"
	// Hold commits the call, then holds the answer until the client gives
	// up (its timeout) or the server's hold bound passes.
	Hold FaultKind = "hold"
	// Status answers Status (with Retry-After when set) without executing.
	Status FaultKind = "status"
)

// Fault is one case's fault. It hits the run's first attempt; Every makes
// it hit every attempt, Identical every attempt identical to the first
// (same key field, same body).
type Fault struct {
	Kind       FaultKind
	Status     int
	RetryAfter int // seconds; 0: no Retry-After
	Mode       string
	Every      bool
	Identical  bool
}

// journal is what every case run keeps, over HTTP or gRPC: its
// attempts, executions and the signals the faults and the runner wait on.
type journal struct {
	Case   string
	Plan   Plan
	ctx    context.Context
	cancel context.CancelFunc

	// overflow closes when the client exceeds Plan.Limit attempts.
	overflow     chan struct{}
	overflowOnce sync.Once
	inflight     sync.WaitGroup

	mu         sync.Mutex
	attempts   []*Attempt
	stray      []*Attempt
	executions []Execution
	gaveUp     bool
	// held closes when an attempt arrives while the Hold fault holds an
	// answer: the client stopped waiting for it.
	held     chan struct{}
	heldOnce sync.Once
	// The parallel run's barrier (barrier): how many wait, the channel
	// that releases them, and whether it gave up waiting (later attempts
	// pass).
	waiting int
	release chan struct{}
	opened  bool
}

func newJournal(caseID string, plan Plan) journal {
	ctx, cancel := context.WithCancel(context.Background())
	return journal{Case: caseID, Plan: plan, ctx: ctx, cancel: cancel, overflow: make(chan struct{}), held: make(chan struct{})}
}

// add journals an attempt on an operation: its number, and the signals
// its arrival gives.
func (j *journal) add(a *Attempt, op string) {
	j.mu.Lock()
	a.Op = op
	j.attempts = append(j.attempts, a)
	a.N = len(j.attempts)
	j.mu.Unlock()
	if a.N > 1 && j.Plan.Fault.Kind == Hold {
		j.heldOnce.Do(func() { close(j.held) })
	}
	if j.Plan.Limit > 0 && a.N > j.Plan.Limit {
		j.overflowOnce.Do(func() { close(j.overflow) })
	}
}

func (j *journal) addStray(a *Attempt) {
	j.mu.Lock()
	j.stray = append(j.stray, a)
	j.mu.Unlock()
}

func (j *journal) markGaveUp() {
	j.mu.Lock()
	j.gaveUp = true
	j.mu.Unlock()
}

// caseRun is one case run of either stand-in.
type caseRun interface {
	BaseURL() string
	Overflow() <-chan struct{}
	Journal() Journal
	Close()
}

// Run is one case run of the HTTP stand-in: its base URL, plan and
// journal.
type Run struct {
	journal
	server  *Server
	prefix  string
	store   *memstore.Store
	handler http.Handler
}

// Execution is one run of the operation behind the key check.
type Execution struct {
	Key string
	ID  string
	At  time.Time
}

// BaseURL is the run's base URL: the client appends the operation's path.
func (r *Run) BaseURL() string { return r.server.origin + r.prefix }

// Overflow closes when the client made more attempts than Plan.Limit.
func (j *journal) Overflow() <-chan struct{} { return j.overflow }

// Close ends the run: held answers are released, the store closed.
func (r *Run) Close() {
	r.cancel()
	r.inflight.Wait()
	r.server.mu.Lock()
	delete(r.server.runs, r.prefix)
	r.server.mu.Unlock()
	_ = r.store.Close()
}

// Journal is a copy of what the run saw, for the judges.
type Journal struct {
	Case       string
	Plan       Plan
	Attempts   []Attempt // attempts on an operation of the config, in arrival order
	Stray      []Attempt // requests to anything else
	Executions []Execution
	// GaveUp: under Hold, the client closed the connection before the
	// answer came (its timeout fired).
	GaveUp bool
}

// Journal returns the run's journal so far.
func (j *journal) Journal() Journal {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := Journal{Case: j.Case, Plan: j.Plan, GaveUp: j.gaveUp, Executions: append([]Execution(nil), j.executions...)}
	for _, a := range j.attempts {
		out.Attempts = append(out.Attempts, *a)
	}
	for _, a := range j.stray {
		out.Stray = append(out.Stray, *a)
	}
	return out
}

// Attempt is one request the client sent, as the stand-in saw it.
type Attempt struct {
	N     int // 1-based, in arrival order within the run
	Conn  int64
	Start time.Time
	End   time.Time
	// Op names the config's operation it called ("" for stray requests).
	Op     string
	Method string
	Path   string // without the run's prefix, with the query
	Header http.Header
	// Keys are the key field's lines exactly as sent (none: no key).
	Keys []string
	Body []byte
	// Status is the answer's status (0: none was sent); RetryAfter its
	// Retry-After value.
	Status     int
	RetryAfter int
	RespHeader http.Header
	RespBody   []byte
	// Fault says what the stand-in did instead of answering plainly.
	Fault string
}

// Key is the attempt's key field as sent ("" when absent; several lines
// joined with ", ", as a proxy would fold them).
func (a Attempt) Key() string { return strings.Join(a.Keys, ", ") }

func (r *Run) serve(w http.ResponseWriter, req *http.Request) {
	r.inflight.Add(1)
	defer r.inflight.Done()
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxRequestBody))
	conn, _ := req.Context().Value(connKey{}).(int64)
	a := &Attempt{
		Conn: conn, Start: time.Now(), Method: req.Method,
		Path: strings.TrimPrefix(req.URL.RequestURI(), r.prefix), Header: req.Header.Clone(),
		Keys: append([]string(nil), req.Header.Values(r.server.target.KeyHeader)...), Body: body,
	}
	op := r.operation(req)
	if op == nil {
		r.addStray(a)
	} else {
		r.add(a, op.Name)
	}
	finish := func(rec *recorder) {
		r.mu.Lock()
		defer r.mu.Unlock()
		a.End = time.Now()
		if rec != nil {
			a.Status, a.RespHeader, a.RespBody = rec.status, rec.header.Clone(), rec.body
			a.RetryAfter, _ = strconv.Atoi(rec.header.Get("Retry-After"))
		}
	}
	if err != nil {
		rec := newRecorder()
		problem(rec, http.StatusRequestEntityTooLarge, "request-too-large", "Request body too large", err.Error(), 0)
		finish(rec)
		rec.copyTo(w)
		return
	}
	if op == nil {
		rec := newRecorder()
		problem(rec, http.StatusNotFound, "not-found", "No such operation",
			fmt.Sprintf("%s %s is not an operation of the stand-in's config", req.Method, req.URL.Path), 0)
		finish(rec)
		rec.copyTo(w)
		return
	}
	if r.Plan.Parallel > 1 {
		r.barrier()
	}
	req.Body = io.NopCloser(strings.NewReader(string(body)))
	if h := r.server.target.KeyHeader; h != "" && !strings.EqualFold(h, "Idempotency-Key") {
		// The reference middleware reads Idempotency-Key: the config's
		// field is moved there.
		req.Header.Del("Idempotency-Key")
		for _, v := range a.Keys {
			req.Header.Add("Idempotency-Key", v)
		}
		req.Header.Del(h)
	}
	f := r.faultFor(a)
	rec := newRecorder()
	switch f.Kind {
	case Status:
		problem(rec, f.Status, statusSlug(f.Status), http.StatusText(f.Status), statusDetail(f.Status), f.RetryAfter)
		a.Fault = fmt.Sprintf("answered %d without executing", f.Status)
		finish(rec)
		rec.copyTo(w)
	case Drop:
		r.handler.ServeHTTP(rec, req)
		a.Fault = fmt.Sprintf("executed (answer %d), then closed the connection without answering", rec.status)
		if f.Mode == "rst" {
			a.Fault = fmt.Sprintf("executed (answer %d), then reset the connection without answering", rec.status)
		}
		finish(nil)
		abort(w, f.Mode)
	case Hold:
		r.handler.ServeHTTP(rec, req)
		held := time.Now()
		t := time.NewTimer(r.server.hold)
		defer t.Stop()
		select {
		case <-req.Context().Done():
			r.markGaveUp()
			a.Fault = fmt.Sprintf("executed (answer %d), held the answer: the client gave up after %s", rec.status, roundMS(time.Since(held)))
			finish(nil)
		case <-r.held:
			// A client may time out without closing its connection; its
			// next attempt shows it stopped waiting.
			r.markGaveUp()
			a.Fault = fmt.Sprintf("executed (answer %d), held the answer: the client sent its next attempt after %s", rec.status, roundMS(time.Since(held)))
			finish(nil)
			abort(w, "fin")
		case <-r.ctx.Done():
			a.Fault = "executed, held the answer until the run ended"
			finish(nil)
		case <-t.C:
			a.Fault = fmt.Sprintf("executed, held the answer %s (the bound): the client was still waiting", r.server.hold)
			finish(rec)
			rec.copyTo(w)
		}
	default:
		r.handler.ServeHTTP(rec, req)
		finish(rec)
		rec.copyTo(w)
	}
}

// operation is the config's operation req calls, nil if none.
func (r *Run) operation(req *http.Request) *apispec.Operation {
	path := strings.TrimPrefix(req.URL.Path, r.prefix)
	for i := range r.server.target.Operations {
		op := &r.server.target.Operations[i]
		p := op.Path
		if j := strings.IndexByte(p, '?'); j >= 0 {
			p = p[:j]
		}
		if strings.EqualFold(op.Method, req.Method) && p == path {
			return op
		}
	}
	return nil
}

// faultFor decides whether a's fault applies.
func (j *journal) faultFor(a *Attempt) Fault {
	f := j.Plan.Fault
	switch {
	case f.Kind == NoFault, f.Every, a.N == 1:
		return f
	case f.Identical:
		j.mu.Lock()
		first := j.attempts[0]
		j.mu.Unlock()
		if first.Key() == a.Key() && string(first.Body) == string(a.Body) {
			return f
		}
	}
	return Fault{}
}

// barrier holds a parallel run's attempts until Plan.Parallel of them
// wait (or barrierWait passes), so that the calls overlap.
func (j *journal) barrier() {
	j.mu.Lock()
	if j.opened {
		j.mu.Unlock()
		return
	}
	if j.release == nil {
		j.release = make(chan struct{})
		go func(release chan struct{}) {
			t := time.NewTimer(barrierWait)
			defer t.Stop()
			select {
			case <-t.C:
				j.mu.Lock()
				if j.release == release {
					j.release, j.opened = nil, true
					close(release)
				}
				j.mu.Unlock()
			case <-j.ctx.Done():
			}
		}(j.release)
	}
	release := j.release
	j.waiting++
	if j.waiting >= j.Plan.Parallel {
		j.waiting = 0
		j.release = nil
		close(release)
	}
	j.mu.Unlock()
	select {
	case <-release:
	case <-j.ctx.Done():
	}
}

// execute is the operation itself: it creates a resource with a fresh id,
// answering the operation's configured response, else the request's JSON
// object, with the id at id_pointer.
func (r *Run) execute(w http.ResponseWriter, req *http.Request) {
	key, _ := reference.KeyFromContext(req.Context())
	op := r.operation(req)
	status := http.StatusCreated
	if req.Method != http.MethodPost {
		status = http.StatusOK
	}
	obj := map[string]any{}
	pointer := "/id"
	if op != nil && op.IDPointer != "" {
		pointer = op.IDPointer
	}
	if op != nil && op.Response != nil {
		_ = json.Unmarshal(op.Response.Body, &obj) // an object or nothing (validated at load)
		if op.Response.Status != 0 {
			status = op.Response.Status
		}
	} else {
		body, _ := io.ReadAll(req.Body)
		_ = json.Unmarshal(body, &obj) // a body that is no object is echoed as nothing
	}
	id := putID(obj, pointer, "id_"+randomHex(8))
	r.mu.Lock()
	r.executions = append(r.executions, Execution{Key: key, ID: id, At: time.Now()})
	r.mu.Unlock()
	out, _ := json.Marshal(obj)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// putID puts a fresh id at the RFC 6901 pointer p of obj, making the
// objects on the way (apispec.WithID: into a configured "{id}" template),
// and returns the id as put.
func putID(obj map[string]any, p, fresh string) string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, part := range parts {
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		if i == len(parts)-1 {
			was, _ := obj[part].(string)
			id := apispec.WithID(was, fresh)
			obj[part] = id
			return id
		}
		next, ok := obj[part].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[part] = next
		}
		obj = next
	}
	return fresh
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func roundMS(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// abort ends the connection without an answer: a FIN, or a reset.
func abort(w http.ResponseWriter, mode string) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && mode == "rst" {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// problem writes an RFC 9457 problem answer.
func problem(w http.ResponseWriter, status int, slug, title, detail string, retryAfter int) {
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	b, _ := json.Marshal(map[string]any{"type": "https://idemcheck.dev/problems/" + slug, "title": title, "status": status, "detail": detail})
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func statusSlug(status int) string {
	switch status {
	case http.StatusConflict:
		return "request-in-flight"
	case http.StatusUnprocessableEntity:
		return "unprocessable"
	case http.StatusBadRequest:
		return "invalid-request"
	case http.StatusTooManyRequests:
		return "rate-limited"
	}
	return "server-error"
}

func statusDetail(status int) string {
	switch status {
	case http.StatusConflict:
		return "A request with this key is still being processed; retry later with the same key."
	case http.StatusUnprocessableEntity:
		return "The request cannot be processed as sent; correct it before retrying."
	case http.StatusBadRequest:
		return "The request is invalid; correct it before retrying."
	case http.StatusTooManyRequests:
		return "Too many requests; retry later."
	}
	return "A transient failure; nothing was executed. Retry with the same key."
}

// recorder buffers an answer so that a fault can withhold it.
type recorder struct {
	status int
	header http.Header
	body   []byte
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, b...)
	return len(b), nil
}

func (r *recorder) copyTo(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body)
}

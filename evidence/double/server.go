package double

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// MaxScan bounds how much of a call's body is searched for a token (and
// read at all: the rest is discarded unread).
const MaxScan = 1 << 20

// Behaviour is how the double answers one token's calls of a route,
// instead of the route's response.
type Behaviour struct {
	// Delay holds the answer back (a slow provider).
	Delay time.Duration `json:"delay,omitempty"`
	// Status, Headers and Body replace the route's when set.
	Status  int               `json:"status,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body,omitempty"`
	// Hang never answers: the call ends when its client gives up or the
	// double closes (the connection is then cut).
	Hang bool `json:"hang,omitempty"`
}

// Server is a running double.
type Server struct {
	cfg     Config
	ln      net.Listener
	srv     *http.Server
	served  chan struct{} // closed when Serve returned
	closing chan struct{} // closed by Close: delayed and hung calls end
	once    sync.Once
	seq     []atomic.Int64 // per route

	mu      sync.RWMutex
	match   *matcher
	tracked map[string]*tokenState
	j       journal
}

// tokenState is one tracked string's counts and behaviours.
type tokenState struct {
	calls  []int // per route
	behave map[int]Behaviour
	any    *Behaviour // for every route
}

// Start listens at cfg.Listen and serves until Close. A listen error is one
// line naming the address (port in use).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	addr := cfg.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err // "bind: address already in use", without "listen tcp ADDR:"
		}
		return nil, fmt.Errorf("downstream.listen %s: %v", addr, err)
	}
	if cfg.JournalCap == 0 {
		cfg.JournalCap = DefaultJournalCap
	}
	s := &Server{
		cfg: cfg, ln: ln, served: make(chan struct{}), closing: make(chan struct{}),
		seq: make([]atomic.Int64, len(cfg.Routes)), match: newMatcher(), tracked: map[string]*tokenState{},
		j: newJournal(cfg.JournalCap, len(cfg.Routes)),
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln) // ErrServerClosed after Close
	}()
	return s, nil
}

// URL is the double's base URL (http://host:port).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Addr is the address the double listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Config is the config the double serves (JournalCap filled in).
func (s *Server) Config() Config { return s.cfg }

// Close stops the double: delayed and hung calls end at once (their
// connections are cut), then it waits for the handlers until ctx ends.
func (s *Server) Close(ctx context.Context) error {
	s.once.Do(func() { close(s.closing) })
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.served
	return err
}

// Track makes calls holding any of tokens count for it (Calls, Journal).
// A token may be a NewToken token (found fastest) or any non-empty string,
// such as an idempotency key the API forwards. Tracking again keeps the
// counts.
func (s *Server) Track(tokens ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tokens {
		if t == "" || s.tracked[t] != nil {
			continue
		}
		s.tracked[t] = &tokenState{calls: make([]int, len(s.cfg.Routes))}
		s.match.add(t)
	}
}

// Untrack forgets tokens, their counts and behaviours: their later calls
// are untokened. It bounds memory in long runs.
func (s *Server) Untrack(tokens ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tokens {
		if s.tracked[t] != nil {
			delete(s.tracked, t)
			s.match.remove(t)
		}
	}
}

// Behave makes the calls of route (a route name; "" for every route) that
// hold token answer as b. The token is tracked if it was not. An unknown
// route is an error.
func (s *Server) Behave(token, route string, b Behaviour) error {
	ri := -1
	if route != "" {
		if ri = s.cfg.RouteIndex(route); ri < 0 {
			return fmt.Errorf("double: no route %q (routes: %s)", route, s.cfg.RouteNames())
		}
	}
	s.Track(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.tracked[token]
	if ri < 0 {
		st.any = &b
		return nil
	}
	if st.behave == nil {
		st.behave = map[int]Behaviour{}
	}
	st.behave[ri] = b
	return nil
}

// ServeHTTP answers a call: the admin paths, else the first matching
// route (404 when none), as the call's token's behaviour says.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, AdminPrefix) {
		s.admin(w, r)
		return
	}
	arrived := time.Now()
	body, _ := io.ReadAll(io.LimitReader(r.Body, MaxScan))
	ri := s.route(r)
	call := Call{Time: arrived, Method: r.Method, Path: r.URL.Path, route: ri}
	if ri >= 0 {
		call.Route = s.cfg.Routes[ri].Name
	}
	answer := Behaviour{Status: http.StatusNotFound, Body: []byte(`{"error":"no route of the double matches this call"}`)}
	if ri >= 0 {
		rr := s.cfg.Routes[ri].Response
		answer = Behaviour{Status: rr.Status, Headers: rr.Headers, Body: rr.Body, Delay: rr.Delay}
		if answer.Status == 0 {
			answer.Status = http.StatusOK
		}
	}
	s.mu.RLock()
	call.Token = s.find(r, body)
	s.mu.RUnlock()
	// Counting and choosing the answer under one lock: a Behave that
	// returned applies to every later call.
	s.mu.Lock()
	if st := s.tracked[call.Token]; call.Token != "" && st != nil {
		if ri >= 0 {
			st.calls[ri]++
		}
		b, ok := st.behave[ri]
		if !ok && st.any != nil {
			b, ok = *st.any, true
		}
		if ok && ri >= 0 {
			answer = merge(answer, b)
		}
	} else {
		call.Token = ""
	}
	call.Status, call.Delay, call.Hung = answer.Status, answer.Delay, answer.Hang
	if answer.Hang {
		call.Status = 0
	}
	at := s.j.add(call)
	seq := s.j.totals.Calls
	s.mu.Unlock()

	if answer.Hang || answer.Delay > 0 {
		var wait <-chan time.Time
		if !answer.Hang {
			t := time.NewTimer(answer.Delay)
			defer t.Stop()
			wait = t.C
		}
		select {
		case <-wait:
		case <-r.Context().Done():
			s.mu.Lock()
			s.j.abandon(at, seq)
			s.mu.Unlock()
			return // the client gave up
		case <-s.closing:
			panic(http.ErrAbortHandler) // cut the connection: no answer, as from a crashed provider
		}
	}
	for k, v := range answer.Headers {
		w.Header().Set(k, v)
	}
	if len(answer.Body) > 0 && w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(answer.Status)
	if len(answer.Body) > 0 {
		out := answer.Body
		if ri >= 0 && bytes.Contains(out, seqMark) {
			out = bytes.ReplaceAll(out, seqMark, strconv.AppendInt(nil, s.seq[ri].Add(1), 10))
		}
		_, _ = w.Write(out)
	}
}

var seqMark = []byte("{seq}")

// merge lays a token's behaviour over the route's answer.
func merge(a, b Behaviour) Behaviour {
	if b.Status != 0 {
		a.Status = b.Status
		if b.Body == nil { // another status: the route's body no longer fits it
			a.Body = nil
		}
	}
	if b.Headers != nil {
		a.Headers = b.Headers
	}
	if b.Body != nil {
		a.Body = b.Body
	}
	a.Delay += b.Delay
	a.Hang = b.Hang
	return a
}

// route is the index of the first route matching r, -1 when none.
func (s *Server) route(r *http.Request) int {
	for i, rt := range s.cfg.Routes {
		if rt.Method != "" && !strings.EqualFold(rt.Method, r.Method) {
			continue
		}
		if ok, _ := doublestar.Match(rt.Path, r.URL.Path); ok { // validated by Config.Validate
			return i
		}
	}
	return -1
}

// find is the tracked string r holds: in its URL (as sent and unescaped),
// a header value or its body. The caller holds s.mu.
func (s *Server) find(r *http.Request, body []byte) string {
	if len(s.tracked) == 0 {
		return ""
	}
	uri := r.URL.RequestURI()
	if t := s.match.find([]byte(uri)); t != "" {
		return t
	}
	if strings.Contains(uri, "%") || strings.Contains(uri, "+") {
		if u, err := url.QueryUnescape(uri); err == nil {
			if t := s.match.find([]byte(u)); t != "" {
				return t
			}
		}
	}
	for _, vs := range r.Header {
		for _, v := range vs {
			if t := s.match.find([]byte(v)); t != "" {
				return t
			}
		}
	}
	return s.match.find(body)
}

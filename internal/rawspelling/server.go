package rawspelling

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The API, a minimal payments API shaped like the reference demo's:
//
//	POST /v1/charges     Idempotency-Key required (400 without); the body's
//	                     optional "delay_ms" (0..10000) holds the request
//	                     in flight. 201 {"id","execution"}; a retry
//	                     replays it with Idempotent-Replayed: true; a retry
//	                     in flight gets 409; another method, target or body
//	                     under a used key 422.
//	GET /v1/effects?key= {"key","executions"}: the execution oracle.
//	GET /healthz         200.
//
// Keys are scoped by the Authorization value.

const (
	keyField    = "Idempotency-Key"
	maxHeader   = 64 << 10
	maxBody     = 1 << 20
	maxDelay    = 10 * time.Second
	idleTimeout = 30 * time.Second
)

// Server is a running rawspelling server on 127.0.0.1.
type Server struct {
	// URL is http://127.0.0.1:PORT.
	URL   string
	exact bool
	ln    net.Listener

	mu         sync.Mutex
	records    map[scope]*record
	executions map[string]int
	conns      map[net.Conn]struct{}
	closed     bool
	stop       chan struct{} // closed by Close: ends delay_ms waits
	wg         sync.WaitGroup
}

type scope struct{ principal, key string }

// record is a key's state: in flight until done is set.
type record struct {
	fingerprint [sha256.Size]byte
	done        bool
	status      int
	body        []byte
}

// Start serves on a free loopback port. exactSpelling builds the bug: the
// key field is looked up by the exact name Idempotency-Key, and a request
// whose only key field is spelled otherwise (idempotency-key) runs
// unprotected, as a keyless request of an API whose key is optional: its
// presence is validated case-insensitively (a gateway's or a schema's
// check), the idempotency layer looks it up by one spelling.
func Start(exactSpelling bool) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), exact: exactSpelling, ln: ln,
		records: map[scope]*record{}, executions: map[string]int{}, conns: map[net.Conn]struct{}{}, stop: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Close stops the server, closes every connection and waits for their
// goroutines (a request held by delay_ms ends with its connection).
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.closed {
		close(s.stop)
	}
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

// Executions is how many times a request with key ran the operation.
func (s *Server) Executions(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.executions[key]
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

// request is one HTTP/1.1 request as read off the wire: fields keep the
// names as sent, in order.
type request struct {
	method, target, proto string
	fields                []field
	body                  []byte
}

type field struct{ name, value string }

// values returns the values of the fields named name: compared
// case-insensitively, or, when exact, byte for byte.
func (r *request) values(name string, exact bool) []string {
	var out []string
	for _, f := range r.fields {
		if f.name == name || (!exact && strings.EqualFold(f.name, name)) {
			out = append(out, f.value)
		}
	}
	return out
}

type response struct {
	status int
	header [][2]string
	body   []byte
}

func (s *Server) serveConn(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	br := bufio.NewReader(c)
	bw := bufio.NewWriter(c)
	for {
		_ = c.SetDeadline(time.Now().Add(idleTimeout))
		req, err := readRequest(br, bw)
		var bad badRequest
		if errors.As(err, &bad) {
			_ = writeResponse(bw, problem(http.StatusBadRequest, bad.Error()), true)
		}
		if err != nil {
			return // a malformed request, or the connection ended
		}
		closeAfter := req.proto == "HTTP/1.0" || hasToken(req.values("Connection", false), "close")
		if err := writeResponse(bw, s.handle(req), closeAfter); err != nil || closeAfter {
			return
		}
	}
}

// badRequest is a request the server answers 400 before closing.
type badRequest struct{ error }

func malformed(format string, args ...any) error { return badRequest{fmt.Errorf(format, args...)} }

// readRequest reads one request: the request line, the field lines as
// sent, and a Content-Length or chunked body.
func readRequest(br *bufio.Reader, bw *bufio.Writer) (*request, error) {
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	for err == nil && line == "" { // empty lines before a request line are allowed
		line, err = tp.ReadLine()
	}
	if err != nil {
		return nil, err
	}
	parts := strings.Split(line, " ")
	if len(parts) != 3 || (parts[2] != "HTTP/1.1" && parts[2] != "HTTP/1.0") {
		return nil, malformed("bad request line %q", line)
	}
	req := &request{method: parts[0], target: parts[1], proto: parts[2]}
	size := len(line)
	for {
		// ReadLine, not ReadMIMEHeader: the latter canonicalises names.
		l, err := tp.ReadLine()
		if err != nil {
			return nil, err
		}
		if l == "" {
			break
		}
		if size += len(l); size > maxHeader {
			return nil, malformed("header section too large")
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok || name == "" || strings.TrimSpace(name) != name {
			return nil, malformed("bad field line %q", l)
		}
		req.fields = append(req.fields, field{name, strings.TrimSpace(value)})
	}
	if hasToken(req.values("Expect", false), "100-continue") {
		if _, err := bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return nil, err
		}
		if err := bw.Flush(); err != nil {
			return nil, err
		}
	}
	var body io.Reader
	te, cl := req.values("Transfer-Encoding", false), req.values("Content-Length", false)
	switch {
	case len(te) > 0:
		if len(te) != 1 || !strings.EqualFold(te[0], "chunked") {
			return nil, malformed("unsupported Transfer-Encoding")
		}
		body = httputil.NewChunkedReader(br)
	case len(cl) > 0:
		n, err := strconv.ParseInt(cl[0], 10, 64)
		if len(cl) != 1 || err != nil || n < 0 || n > maxBody {
			return nil, malformed("bad Content-Length")
		}
		body = io.LimitReader(br, n)
	default:
		return req, nil
	}
	b, err := io.ReadAll(io.LimitReader(body, maxBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBody {
		return nil, malformed("body too large")
	}
	if len(te) > 0 { // the trailer section after the last chunk
		for {
			l, err := tp.ReadLine()
			if err != nil {
				return nil, err
			}
			if l == "" {
				break
			}
		}
	}
	req.body = b
	return req, nil
}

func writeResponse(bw *bufio.Writer, resp response, closeAfter bool) error {
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", resp.status, http.StatusText(resp.status))
	for _, h := range resp.header {
		fmt.Fprintf(bw, "%s: %s\r\n", h[0], h[1])
	}
	if closeAfter {
		_, _ = bw.WriteString("Connection: close\r\n")
	}
	fmt.Fprintf(bw, "Content-Length: %d\r\n\r\n", len(resp.body))
	_, _ = bw.Write(resp.body)
	return bw.Flush()
}

func hasToken(values []string, token string) bool {
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func problem(status int, detail string) response {
	b, _ := json.Marshal(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
	return response{status: status, header: [][2]string{{"Content-Type", "application/problem+json"}}, body: b}
}

func jsonResponse(status int, v any) response {
	b, _ := json.Marshal(v)
	return response{status: status, header: [][2]string{{"Content-Type", "application/json"}}, body: b}
}

func (s *Server) handle(req *request) response {
	u, err := url.ParseRequestURI(req.target)
	if err != nil {
		return problem(http.StatusBadRequest, "bad request target")
	}
	switch {
	case req.method == http.MethodGet && u.Path == "/healthz":
		return response{status: http.StatusOK, header: [][2]string{{"Content-Type", "text/plain"}}, body: []byte("ok\n")}
	case req.method == http.MethodGet && u.Path == "/v1/effects":
		key := u.Query().Get("key")
		return jsonResponse(http.StatusOK, map[string]any{"key": key, "executions": s.Executions(key)})
	case req.method == http.MethodPost && u.Path == "/v1/charges":
		return s.charge(req)
	}
	return problem(http.StatusNotFound, "no such resource")
}

func (s *Server) charge(req *request) response {
	var in struct {
		DelayMS int64 `json:"delay_ms"`
	}
	if len(req.body) > 0 {
		if err := json.Unmarshal(req.body, &in); err != nil || in.DelayMS < 0 || in.DelayMS > maxDelay.Milliseconds() {
			return problem(http.StatusBadRequest, "the body must be JSON with delay_ms between 0 and 10000")
		}
	}
	keys := req.values(keyField, s.exact)
	anySpelling := req.values(keyField, false)
	switch {
	case len(keys) > 1:
		return problem(http.StatusBadRequest, "the Idempotency-Key field must appear once")
	case len(keys) == 0 && len(anySpelling) == 0:
		return problem(http.StatusBadRequest, "the Idempotency-Key field is required")
	case len(keys) == 0:
		// The bug: the field is there under another spelling; the
		// request runs unprotected, counted under its key.
		return s.execute(strings.Trim(anySpelling[0], `"`), in.DelayMS)
	}
	key := strings.Trim(keys[0], `"`)
	if key == "" {
		return problem(http.StatusBadRequest, "the key must not be empty")
	}
	sc := scope{strings.Join(req.values("Authorization", false), ","), key}
	fp := sha256.Sum256([]byte(req.method + " " + req.target + "\n" + string(req.body)))
	s.mu.Lock()
	rec, ok := s.records[sc]
	switch {
	case ok && rec.fingerprint != fp:
		s.mu.Unlock()
		return problem(http.StatusUnprocessableEntity, "the key was used for another request")
	case ok && !rec.done:
		s.mu.Unlock()
		resp := problem(http.StatusConflict, "a request with this key is in flight")
		resp.header = append(resp.header, [2]string{"Retry-After", "1"})
		return resp
	case ok:
		s.mu.Unlock()
		return response{status: rec.status, body: rec.body,
			header: [][2]string{{"Content-Type", "application/json"}, {"Idempotent-Replayed", "true"}}}
	}
	rec = &record{fingerprint: fp}
	s.records[sc] = rec
	s.mu.Unlock()
	resp := s.execute(key, in.DelayMS)
	s.mu.Lock()
	rec.done, rec.status, rec.body = true, resp.status, bytes.Clone(resp.body)
	s.mu.Unlock()
	return resp
}

// execute runs the operation: counts it, waits delay_ms, answers 201.
func (s *Server) execute(key string, delayMS int64) response {
	s.mu.Lock()
	s.executions[key]++
	n := s.executions[key]
	s.mu.Unlock()
	t := time.NewTimer(time.Duration(delayMS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.stop:
	}
	return jsonResponse(http.StatusCreated, map[string]any{"id": fmt.Sprintf("ch_%x", sha256.Sum256([]byte(key+strconv.Itoa(n))))[:19], "execution": n})
}

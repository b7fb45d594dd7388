package reference

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Field names are case-insensitive (RFC 9110 5.1), and net/http hands
// them to handlers canonicalised: a handler cannot tell `idempotency-key`
// from `Idempotency-Key`. The exact-key-spelling defect must, to behave
// as a server that looks the field up by its exact spelling, so
// KeepFieldSpelling reads each HTTP/1.1 request's field names from the
// connection's bytes as the server reads them. HTTP/2 needs none of this:
// every HTTP/2 field name is lower case on the wire (RFC 9113 8.2.1).

// KeepFieldSpelling makes srv record how each HTTP/1.1 request spelled the
// name of its Idempotency-Key field lines, for the exact-key-spelling
// defect: it wraps srv.Handler and srv.ConnContext (set them first) and
// returns the listener to serve on. The bytes are observed, never
// changed. ln must carry plain HTTP (HTTP/1.1, and HTTP/2 with prior
// knowledge, which needs nothing recorded): below TLS the bytes are
// ciphertext.
func KeepFieldSpelling(srv *http.Server, ln net.Listener) net.Listener {
	next, base := srv.Handler, srv.ConnContext
	if next == nil {
		next = http.DefaultServeMux
	}
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if base != nil {
			ctx = base(ctx, c)
		}
		if sc, ok := c.(*spellingConn); ok {
			ctx = context.WithValue(ctx, spellingConnKey{}, sc)
		}
		return ctx
	}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sc, ok := r.Context().Value(spellingConnKey{}).(*spellingConn); ok && r.ProtoMajor == 1 {
			if names, ok := sc.take(r.Method, r.RequestURI); ok {
				r = r.WithContext(context.WithValue(r.Context(), spellingKey{}, names))
			}
		}
		next.ServeHTTP(w, r)
	})
	return spellingListener{ln}
}

type (
	spellingConnKey struct{}
	spellingKey     struct{}
)

// keyNames returns how r spelled the names of its Idempotency-Key field
// lines, one per line in r.Header's order, when known.
func keyNames(r *http.Request) ([]string, bool) {
	if r.ProtoMajor >= 2 {
		names := make([]string, len(r.Header[headerKey]))
		for i := range names {
			names[i] = strings.ToLower(headerKey)
		}
		return names, true
	}
	names, ok := r.Context().Value(spellingKey{}).([]string)
	return names, ok
}

type spellingListener struct{ net.Listener }

func (l spellingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &spellingConn{Conn: c}, nil
}

// maxSpellingLine bounds a line the reader keeps; past it the reader gives
// up (the server rejects such a request anyway).
const maxSpellingLine = 64 << 10

type readState int

const (
	stRequestLine readState = iota
	stHeader
	stBody      // remaining bytes of a Content-Length body
	stChunkSize // a chunk-size line
	stChunkData // remaining bytes of a chunk
	stChunkEnd  // the CRLF after a chunk's data
	stTrailer   // trailer lines up to an empty one
	stOff       // not HTTP/1.x (the HTTP/2 preface) or not understood
)

// spellingConn follows the HTTP/1.1 message framing of what the server
// reads and queues, per request, the spellings of its key field's names.
// The server reads a request's header section before it calls a handler,
// so the request's entry is queued by then.
type spellingConn struct {
	net.Conn
	mu        sync.Mutex
	state     readState
	line      []byte
	remaining int64
	chunked   bool
	cur       fieldSpelling
	queue     []fieldSpelling
}

// fieldSpelling is one request's: its request line's method and target
// (to pair it with the request the server hands over) and the key field's
// names as sent.
type fieldSpelling struct {
	method, target string
	names          []string
}

func (c *spellingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.mu.Lock()
		c.feed(b[:n])
		c.mu.Unlock()
	}
	return n, err
}

// take returns the spellings of the request with method and target,
// dropping entries of requests the server answered without a handler
// (OPTIONS *, for one).
func (c *spellingConn) take(method, target string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.queue {
		if e.method == method && e.target == target {
			c.queue = c.queue[i+1:]
			return e.names, true
		}
	}
	return nil, false
}

func (c *spellingConn) feed(b []byte) {
	for len(b) > 0 {
		switch c.state {
		case stOff:
			return
		case stBody, stChunkData:
			k := min(c.remaining, int64(len(b)))
			c.remaining -= k
			b = b[k:]
			if c.remaining == 0 {
				if c.state == stBody {
					c.state = stRequestLine
				} else {
					c.state = stChunkEnd
				}
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.appendLine(b)
			return
		}
		c.appendLine(b[:i])
		b = b[i+1:]
		if c.state != stOff {
			c.endLine(strings.TrimSuffix(string(c.line), "\r"))
			c.line = c.line[:0]
		}
	}
}

func (c *spellingConn) appendLine(b []byte) {
	if len(c.line)+len(b) > maxSpellingLine {
		c.state = stOff
		c.line = nil
		return
	}
	c.line = append(c.line, b...)
}

func (c *spellingConn) endLine(line string) {
	switch c.state {
	case stRequestLine:
		if line == "" {
			return // an empty line before a request line is allowed (RFC 9112 2.2)
		}
		parts := strings.Split(line, " ")
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "HTTP/1.") {
			c.state = stOff // the HTTP/2 preface (PRI * HTTP/2.0), or garbage
			return
		}
		c.cur = fieldSpelling{method: parts[0], target: parts[1]}
		c.remaining, c.chunked = 0, false
		c.state = stHeader
	case stHeader:
		if line == "" {
			c.queue = append(c.queue, c.cur)
			switch {
			case c.chunked:
				c.state = stChunkSize
			case c.remaining > 0:
				c.state = stBody
			default:
				c.state = stRequestLine
			}
			return
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			c.state = stOff
			return
		}
		value = strings.TrimSpace(value)
		switch {
		case strings.EqualFold(name, headerKey):
			c.cur.names = append(c.cur.names, name)
		case strings.EqualFold(name, "Content-Length"):
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < 0 {
				c.state = stOff
				return
			}
			c.remaining = n
		case strings.EqualFold(name, "Transfer-Encoding"):
			c.chunked = strings.EqualFold(value, "chunked")
		}
	case stChunkSize:
		size, _, _ := strings.Cut(line, ";")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		switch {
		case err != nil || n < 0:
			c.state = stOff
		case n == 0:
			c.state = stTrailer
		default:
			c.remaining, c.state = n, stChunkData
		}
	case stChunkEnd:
		if line != "" {
			c.state = stOff
			return
		}
		c.state = stChunkSize
	case stTrailer:
		if line == "" {
			c.state = stRequestLine
		}
	}
}

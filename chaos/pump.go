package chaos

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strconv"
)

// The pump: with no rule to match and no history to write, a request of
// the common shape is forwarded as bytes, the way a TCP proxy would, with
// the HTTP/1.1 framing read from the head in place (no http.Request, no
// header map). Anything outside that shape (chunked bodies, hop-by-hop or
// Expect fields, HTTP/1.0, absolute targets, HEAD, a head not yet whole in
// the buffer) takes the parsing path, which answers it identically.

// pumpable reports whether the proxy may pump requests: its own upstream
// pool (one upstream: replicas take the parsing path), an upstream without
// a base path, no history. Rules are checked per
// request (pickRaw).
func (p *Proxy) pumpable() bool {
	_, own := p.opts.transport.(*connPool)
	return own && p.opts.history == nil && (p.upstreams[0].Path == "" || p.upstreams[0].Path == "/")
}

// pickRaw numbers a pumped attempt; false (nothing counted) when a rule
// exists, since rules need the parsed request.
func (p *Proxy) pickRaw(key []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.rules) > 0 {
		return false
	}
	p.counters.Requests++
	p.counters.Forwarded++
	switch {
	case len(key) == 0:
	case bytes.IndexByte(key, '\\') >= 0:
		p.attempts.next(unquoteKey(string(key)))
	case len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"':
		p.attempts.nextBytes(key[1 : len(key)-1])
	default:
		p.attempts.nextBytes(key)
	}
	return true
}

// reqHead is what the pump needs from a request head.
type reqHead struct {
	n        int    // head length, blank line included
	method   []byte // request method
	hostAt   [2]int // the Host field's value, as offsets into the head
	key      []byte // the key field's value
	bodySize int64
}

// parseReqHead reads the head at the start of b; false when it is not
// whole in b or not of the shape the pump forwards.
func parseReqHead(b []byte, keyHeader string) (h reqHead, ok bool) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return h, false
	}
	h.n = end + 4
	line, rest, _ := bytes.Cut(b[:end+2], []byte("\r\n"))
	sp1 := bytes.IndexByte(line, ' ')
	sp2 := bytes.LastIndexByte(line, ' ')
	if sp1 <= 0 || sp2 <= sp1+1 || string(line[sp2+1:]) != "HTTP/1.1" || line[sp1+1] != '/' {
		return h, false
	}
	h.method = line[:sp1]
	switch string(h.method) {
	case http.MethodHead, http.MethodConnect:
		return h, false
	}
	off := len(line) + 2
	hasLen := false
	for len(rest) > 0 {
		var l []byte
		l, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		colon := bytes.IndexByte(l, ':')
		if colon <= 0 || l[0] == ' ' || l[0] == '\t' {
			return h, false // obs-fold or malformed: the parser answers it
		}
		name := l[:colon]
		vs := colon + 1
		for vs < len(l) && (l[vs] == ' ' || l[vs] == '\t') {
			vs++
		}
		ve := len(l)
		for ve > vs && (l[ve-1] == ' ' || l[ve-1] == '\t') {
			ve--
		}
		value := l[vs:ve]
		switch {
		case asciiEqualFold(name, "Content-Length"):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if hasLen || err != nil || n < 0 {
				return h, false
			}
			h.bodySize, hasLen = n, true
		case asciiEqualFold(name, "Host"):
			if h.hostAt[1] != 0 {
				return h, false
			}
			h.hostAt = [2]int{off + vs, off + ve}
		case asciiEqualFold(name, keyHeader):
			if h.key == nil {
				h.key = value
			}
		case asciiEqualFold(name, "Expect") || isHop(name):
			return h, false
		}
		off += len(l) + 2
	}
	return h, h.hostAt[1] != 0
}

// isHop reports the hop-by-hop fields the parsing path strips.
func isHop(name []byte) bool {
	for _, k := range hopHeaders {
		if asciiEqualFold(name, k) {
			return true
		}
	}
	return false
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// respHead is what the pump needs from a response head.
type respHead struct {
	n        int // head length, blank line included
	bodySize int64
}

// parseRespHead reads a final response head at the start of b; false for
// anything the parsing path must handle (1xx, 204, 304, no Content-Length,
// chunked, hop-by-hop fields, no Date).
func parseRespHead(b []byte) (h respHead, ok bool) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 || len(b) < 12 || string(b[:9]) != "HTTP/1.1 " {
		return h, false
	}
	h.n = end + 4
	status, err := strconv.Atoi(string(b[9:12]))
	// 204 and 304 have no body whatever Content-Length says.
	if err != nil || status < 200 || status == http.StatusNoContent || status == http.StatusNotModified ||
		(len(b) > 12 && b[12] != ' ' && b[12] != '\r') {
		return h, false
	}
	_, rest, _ := bytes.Cut(b[:end+2], []byte("\r\n"))
	hasLen, hasDate := false, false
	for len(rest) > 0 {
		var l []byte
		l, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		colon := bytes.IndexByte(l, ':')
		if colon <= 0 || l[0] == ' ' || l[0] == '\t' {
			return h, false
		}
		name := l[:colon]
		switch {
		case asciiEqualFold(name, "Content-Length"):
			n, err := strconv.ParseInt(string(bytes.TrimSpace(l[colon+1:])), 10, 64)
			if hasLen || err != nil || n < 0 {
				return h, false
			}
			h.bodySize, hasLen = n, true
		case asciiEqualFold(name, "Date"):
			hasDate = true
		case isHop(name):
			return h, false
		}
	}
	return h, hasLen && hasDate
}

// pump forwards the request at the head of c's buffer as bytes. handled
// is false when the request is not pumpable (nothing was consumed: the
// parsing path takes it); keep says the connection can carry another.
func (c *clientConn) pump() (handled, keep bool) {
	p := c.s.p
	if p.opts.keyOf != nil { // the key is in the body: the parsing path reads it
		return false, false
	}
	buffered, _ := c.br.Peek(c.br.Buffered())
	h, ok := parseReqHead(buffered, p.opts.keyHeader)
	// The whole request is read before anything is forwarded, as on the
	// parsing path: a client that leaves mid-body never reaches the upstream.
	total := int64(h.n) + h.bodySize
	if !ok || h.bodySize > p.opts.maxBody || total > int64(c.br.Size()) {
		return false, false
	}
	// The read deadline stays the idle one unless part of the body is
	// still to come: alternating the two would re-arm both every request.
	if total > int64(len(buffered)) {
		c.dl.armRead(c.conn, p.opts.timeout)
	}
	c.dl.armWrite(c.conn, p.opts.timeout)
	req, err := c.br.Peek(int(total))
	if err != nil {
		return true, false // the client went away mid-body
	}
	if !p.pickRaw(h.key) {
		return false, false
	}
	p.inflight.Add(1)
	defer p.inflight.Done()
	pool := p.opts.transport.(*connPool)
	// A dial is bounded by the pool's dialer; the exchange by the deadline.
	up, err := pool.get(context.Background())
	if err != nil {
		return true, c.pumpFailed(h, err)
	}
	up.dl.arm(up, p.opts.timeout)
	// The request as sent, with the upstream's Host.
	_, _ = up.bw.Write(req[:h.hostAt[0]])
	_, _ = up.bw.WriteString(p.upstreams[0].Host)
	_, _ = up.bw.Write(req[h.hostAt[1]:])
	_, _ = c.br.Discard(int(total))
	if err := up.bw.Flush(); err != nil {
		_ = up.Close()
		return true, c.pumpFailed(h, err)
	}
	rh, err := readRespHead(up.br)
	if err != nil {
		_ = up.Close()
		return true, c.pumpFailed(h, err)
	}
	if rh.n == 0 {
		// A response the pump does not frame: parse it, answer through
		// the parsing path's writer.
		return true, c.pumpParsed(h, up)
	}
	head, _ := up.br.Peek(rh.n)
	_, _ = c.bw.Write(head)
	_, _ = up.br.Discard(rh.n)
	if err := copyN(c.bw, up.br, rh.bodySize); err != nil {
		// Part of the answer may be out: the connection cannot continue.
		_ = up.Close()
		p.count(false, true)
		return true, false
	}
	pool.put(up)
	return true, c.bw.Flush() == nil
}

// readRespHead waits for a whole response head in br; n is 0 when it is
// not one the pump frames (or does not fit the buffer).
func readRespHead(br *bufio.Reader) (respHead, error) {
	for want := 1; ; want = br.Buffered() + 1 {
		b, err := br.Peek(want)
		if err != nil && err != bufio.ErrBufferFull {
			return respHead{}, err
		}
		b, _ = br.Peek(br.Buffered())
		if bytes.Contains(b, []byte("\r\n\r\n")) || err == bufio.ErrBufferFull {
			h, ok := parseRespHead(b)
			if !ok {
				h = respHead{}
			}
			return h, nil
		}
	}
}

// copyN moves n bytes from br to w through br's buffer.
func copyN(w *bufio.Writer, br *bufio.Reader, n int64) error {
	for n > 0 {
		if br.Buffered() == 0 {
			if _, err := br.Peek(1); err != nil {
				return err
			}
		}
		k := int(min(n, int64(br.Buffered())))
		b, _ := br.Peek(k)
		if _, err := w.Write(b); err != nil {
			return err
		}
		_, _ = br.Discard(k)
		n -= int64(k)
	}
	return nil
}

// pumpParsed answers a pumped request whose response needs parsing.
func (c *clientConn) pumpParsed(h reqHead, up *upConn) bool {
	p := c.s.p
	req := &http.Request{Method: string(h.method)}
	resp, err := http.ReadResponse(up.br, req)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(up.br, req)
	}
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
		err = errSwitchedProtocols
	}
	if err != nil {
		_ = up.Close()
		return c.pumpFailed(h, err)
	}
	resp.Body = &poolBody{rc: resp.Body, c: up, p: p.opts.transport.(*connPool), reuse: !resp.Close}
	u := &Upstream{Status: resp.StatusCode, header: resp.Header, buf: bufPool.Get().(*bytes.Buffer)}
	err = readBody(u.buf, resp, p.opts.maxBody)
	u.body = u.buf.Bytes()
	if err != nil {
		u.Error = err.Error()
		p.count(false, true)
	}
	w := &rawResponse{c: c, req: req}
	x := &Relay{w: w, r: req, p: p}
	x.ev.Upstream = append(x.ev.Upstream, *u)
	x.Respond(u)
	x.release()
	return c.bw.Flush() == nil && !w.close
}

// pumpFailed answers 502 for an upstream that failed, as the parsing
// path does.
func (c *clientConn) pumpFailed(h reqHead, err error) bool {
	c.s.p.count(false, true)
	req := &http.Request{Method: string(h.method)}
	w := &rawResponse{c: c, req: req}
	x := &Relay{w: w, r: req, p: c.s.p}
	x.Respond(&Upstream{Error: err.Error()})
	return c.bw.Flush() == nil && !w.close
}

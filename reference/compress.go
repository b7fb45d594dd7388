package reference

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Compress answers with gzip content coding (RFC 9110 8.4) when the
// request accepts it and the response is text or JSON. Put it outside
// Middleware: records then hold the identity body, and each answer, the
// first or a replay, is coded for the request it answers, so a retry that
// accepts only identity never receives gzip (RFC 9110 12.5.3). Every size
// is coded, so any operation's answer shows the coding.
func Compress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := codingWriters.Get().(*codingWriter)
		*cw = codingWriter{ResponseWriter: w, gzip: acceptsGzip(r), head: r.Method == http.MethodHead}
		defer cw.finish()
		next.ServeHTTP(cw, r)
	})
}

// acceptsGzip reports whether r's Accept-Encoding gives gzip (or x-gzip,
// or *) a non-zero weight. Without the field only identity is sent: a
// client that accepts any coding is rare and safer served plainly.
func acceptsGzip(r *http.Request) bool {
	lines, ok := r.Header["Accept-Encoding"]
	if !ok {
		return false
	}
	star, named := false, false
	for _, line := range lines {
		for item := range strings.SplitSeq(line, ",") {
			coding, params, _ := strings.Cut(item, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "x-gzip" && coding != "*" {
				continue
			}
			ok := weight(params) > 0
			if coding == "*" {
				star = ok
				continue
			}
			if !ok {
				return false // gzip;q=0 refuses gzip whatever * says
			}
			named = true
		}
	}
	return named || star
}

// weight is the q parameter of an Accept-Encoding item (1 without one, 0
// when unreadable).
func weight(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		name, value, _ := strings.Cut(p, "=")
		if strings.EqualFold(strings.TrimSpace(name), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return 0
			}
			return q
		}
	}
	return 1
}

// codable reports whether a response with header h and status may be
// given a content coding: text or JSON with a body, not coded already.
func codable(h http.Header, status int) bool {
	if status < 200 || status == http.StatusNoContent || status == http.StatusNotModified || first(h, "Content-Encoding") != "" {
		return false
	}
	mt, _, _ := strings.Cut(first(h, "Content-Type"), ";")
	mt = strings.TrimSpace(mt)
	return hasPrefixFold(mt, "text/") || strings.EqualFold(mt, "application/json") || hasSuffixFold(mt, "+json")
}

// first is h's first value under the canonical name: Get would
// canonicalize the name on every answer.
func first(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// The media type is compared without mime.ParseMediaType, which builds a
// parameter map per call: this runs on every answer, replays included.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

var (
	gzipPool      = sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}
	codingWriters = sync.Pool{New: func() any { return new(codingWriter) }}
	// hvAcceptEncoding is shared by every answer's Vary; clipped, so an
	// append copies it.
	hvAcceptEncoding = []string{"Accept-Encoding"}[:1:1]
)

// codingWriter decides at the first body byte (or at the end) whether to
// code the response: the status and header are known by then.
type codingWriter struct {
	http.ResponseWriter
	gzip, head bool
	status     int
	decided    bool
	gz         *gzip.Writer
}

func (c *codingWriter) WriteHeader(code int) {
	if c.status == 0 && code >= 200 {
		c.status = code
	}
	if code < 200 { // 1xx goes out at once and decides nothing
		c.ResponseWriter.WriteHeader(code)
	}
}

func (c *codingWriter) Write(p []byte) (int, error) {
	if !c.decided {
		c.decide(len(p) > 0)
	}
	if c.gz != nil {
		return c.gz.Write(p)
	}
	return c.ResponseWriter.Write(p)
}

func (c *codingWriter) decide(body bool) {
	c.decided = true
	if c.status == 0 {
		c.status = http.StatusOK
	}
	h := c.Header()
	if codable(h, c.status) {
		// The representation depends on Accept-Encoding, coded or not.
		if v := h["Vary"]; len(v) > 0 {
			h["Vary"] = append(v, hvAcceptEncoding...)
		} else {
			h["Vary"] = hvAcceptEncoding
		}
		if c.gzip && body && !c.head {
			h.Set("Content-Encoding", "gzip")
			h.Del("Content-Length")
			c.gz = gzipPool.Get().(*gzip.Writer)
			c.gz.Reset(c.ResponseWriter)
		}
	}
	c.ResponseWriter.WriteHeader(c.status)
}

func (c *codingWriter) finish() {
	if !c.decided && c.status != 0 {
		c.decide(false)
	}
	if c.gz != nil {
		_ = c.gz.Close()
		c.gz.Reset(io.Discard) // drop the reference to the response
		gzipPool.Put(c.gz)
	}
	*c = codingWriter{} // drop the references to the response
	codingWriters.Put(c)
}

// gzipBody is body in gzip coding, as the replay-coded-body defect stores
// it.
func gzipBody(body []byte) []byte {
	var b bytes.Buffer
	gz := gzipPool.Get().(*gzip.Writer)
	gz.Reset(&b)
	_, _ = gz.Write(body)
	_ = gz.Close()
	gz.Reset(io.Discard)
	gzipPool.Put(gz)
	return b.Bytes()
}

package reference

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
)

// What the middleware keeps of a response and how it replays it: the
// statuses kept, the stored headers and body, the recorder that captures
// the handler's answer.

// keeps reports whether an outcome with status is stored.
func (m *middleware) keeps(status int) bool {
	switch {
	case status >= 500:
		return m.storeAll || m.defects.has(Cache5xx)
	case status >= 400:
		return !m.defects.has(NoCache4xx)
	}
	return true
}

// codingHeaders are stored besides the allow-list under the
// replay-coded-body defect, which stores coded bodies.
var codingHeaders = []string{"Content-Encoding", "Vary"}

func (m *middleware) storedHeader(h http.Header) http.Header {
	out := make(http.Header, len(m.replayHeaders))
	names := m.replayHeaders
	if m.defects.has(ReplayCodedBody) {
		names = append(slices.Clip(names), codingHeaders...)
	}
	for _, name := range names {
		if v := h[name]; len(v) > 0 {
			if m.defects.has(ReplayJoinsHeaders) {
				v = []string{strings.Join(v, ", ")}
			}
			out[name] = slices.Clip(slices.Clone(v))
		}
	}
	return out
}

// truncatedBody is where the replay-truncates-body defect cuts bodies.
const truncatedBody = 64 << 10

// storedBody is the copy of a response body a record keeps.
func (m *middleware) storedBody(b []byte) []byte {
	switch {
	case m.defects.has(ReplayTruncatesBody) && len(b) > truncatedBody:
		b = b[:truncatedBody]
	case m.defects.has(ReplayReencodesBody):
		return []byte(strings.ToValidUTF8(string(b), "\uFFFD"))
	}
	return slices.Clone(b)
}

// replay writes a stored response. Header slices are shared with the
// record; they are clipped so that an append never writes into them.
func (m *middleware) replay(w http.ResponseWriter, resp Response) {
	h := w.Header()
	if !m.defects.has(ReplayDropsHeaders) {
		for k, v := range resp.Header {
			h[k] = slices.Clip(v)
		}
	}
	h["Idempotent-Replayed"] = hvTrue
	status := resp.Status
	if m.defects.has(ReplayAs200) {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(resp.Body)
}

// runHandler calls h and reports a panic instead of propagating it, except
// http.ErrAbortHandler, which is net/http's way to abort a response.
func runHandler(h http.Handler, w http.ResponseWriter, r *http.Request) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler { //nolint:errorlint // sentinel panic value
				panic(v)
			}
			panicked = true
		}
	}()
	h.ServeHTTP(w, r)
	return false
}

// recorder buffers the handler's response so it can be stored before the
// client sees it.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

func (r *recorder) statusCode() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

func (r *recorder) flush(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range r.header {
		h[k] = v
	}
	w.WriteHeader(r.statusCode())
	_, _ = w.Write(r.body.Bytes())
}

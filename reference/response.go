package reference

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"maps"
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
	if m.defects.has(ReplayCredentials) {
		names = append(slices.Clip(names), credentialHeaders...)
	}
	if m.defects.has(ReplayJoinsHeaders) {
		names = slices.Collect(maps.Keys(h)) // a map of strings keeps every field
	}
	for _, name := range names {
		if v := h[name]; len(v) > 0 {
			switch {
			case m.defects.has(ReplayJoinsHeaders):
				v = []string{strings.Join(v, ", ")}
			case m.defects.has(ReplaySplitsHeaders):
				v = splitAtCommas(v)
			}
			out[name] = slices.Clip(slices.Clone(v))
		}
	}
	return out
}

// splitAtCommas is the replay-splits-headers defect's reading of a field:
// every comma starts a new line.
func splitAtCommas(lines []string) []string {
	var out []string
	for _, l := range lines {
		for p := range strings.SplitSeq(l, ",") {
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out
}

// rebuiltError is the replay-rebuilds-errors defect's replay of a stored
// error body: decoded and written anew, its detail dropped and a trace id
// of this answer's added.
func rebuiltError(b []byte) []byte {
	var doc map[string]any
	if json.Unmarshal(b, &doc) != nil {
		return b
	}
	delete(doc, "detail")
	doc["trace_id"] = rand.Text()
	out, err := json.Marshal(doc)
	if err != nil {
		return b
	}
	return out
}

// outcome is what a record keeps of the handler's answer rec: its status,
// stored headers and body, or, for a body over WithLargeTombstone's
// bound, a 413 tombstone in its place.
func (m *middleware) outcome(status int, rec *recorder) Response {
	if m.tombstoneOver > 0 && int64(rec.body.Len()) > m.tombstoneOver {
		return Response{Status: http.StatusRequestEntityTooLarge, Header: http.Header{"Content-Type": hvProblemJSON}, Body: m.problems[probTombstone]}
	}
	return Response{Status: status, Header: m.storedHeader(rec.header), Body: m.storedBody(rec.body.Bytes())}
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
	status, body := resp.Status, resp.Body
	if m.defects.has(ReplayAs200) {
		status = http.StatusOK
	}
	if m.defects.has(ReplayRebuildsErrors) && resp.Status >= 400 {
		body = rebuiltError(body)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
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

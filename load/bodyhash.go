package load

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// bodySumHeader carries, on each response the runner reads, the SHA-256
// and length of what the replay check compares of the body ("<hex>
// <bytes>"): the body itself, or its apispec.ReplayForm under the
// profile's replay_compare, computed while vegeta reads it. The check
// compares these sums, so vegeta keeps only an evidence prefix of each
// body instead of a copy of it; results files keep the header, so `load
// report` compares the same sums.
const bodySumHeader = "Idemcheck-Body-Sha256"

// createdIDHeader carries the created id at the operation's id_pointer
// in a 2xx body, when one is configured: executions are told apart by
// their ids, as `run` does.
const createdIDHeader = "Idemcheck-Created-Id"

// evidenceBytes is the body prefix kept per result: enough for clip to
// quote and to show whether it cut.
const evidenceBytes = clipBytes + 1

// maxFormBody bounds the body buffered to compute its JSON form or
// created id; a longer body is compared as bytes and shows no id.
const maxFormBody = 4 << 20

// sumTransport sets bodySumHeader (and createdIDHeader) on every
// response whose body is read to its end. It hashes the bytes as they
// stream; with compare json, or an idPointer on a 2xx, it also buffers
// the body.
type sumTransport struct {
	base      http.RoundTripper
	compare   string // the profile's replay_compare ("": bytes)
	idPointer string
	facts     *bodyFacts // what the bodies seen showed, by their bytes' sum
}

// bodyFacts maps a body's bytes sum to its JSON form's sum and its
// created id: a replay repeats its original's bytes (or should), so a hit
// costs a lookup, not a decode (about 15 µs and 50 allocations for a
// 200-byte body here). Bounded: past maxFacts bodies it stops remembering.
type bodyFacts struct {
	m sync.Map // bytes sum -> facts
	n atomic.Int64
}

type facts struct{ form, id string }

const maxFacts = 1 << 16

// of returns the facts of body, whose bytes sum is raw: its form sum
// under compare (json; else raw) and the id at idPointer ("" for none).
func (c *bodyFacts) of(raw string, body []byte, compare, idPointer string) facts {
	if v, ok := c.m.Load(raw); ok {
		return v.(facts)
	}
	f := facts{form: raw}
	if compare == apispec.CompareJSON {
		form := apispec.ReplayForm(compare, body)
		sum := sha256.Sum256(form)
		f.form = formatSum(sum[:], int64(len(form)))
	}
	if idPointer != "" {
		f.id = jsonx.PointerText(body, idPointer)
	}
	if c.n.Add(1) <= maxFacts {
		c.m.Store(raw, f)
	}
	return f
}

func (t sumTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	// A server's own values must not count.
	delete(resp.Header, bodySumHeader)
	delete(resp.Header, createdIDHeader)
	b := &summingBody{ReadCloser: resp.Body, h: hashes.Get().(hash.Hash), header: resp.Header, compare: t.compare,
		idPointer: t.idPointer, facts: t.facts, created: resp.StatusCode >= 200 && resp.StatusCode < 300}
	if t.compare == apispec.CompareJSON || (b.created && t.idPointer != "") {
		b.buf = bufs.Get().(*bytes.Buffer)
	}
	resp.Body = b
	return resp, nil
}

// CloseIdleConnections forwards to the wrapped transport: the run's
// deferred client.CloseIdleConnections closes its connections (a gRPC
// target's carrier connection among them).
func (t sumTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// hashes recycles the digests of bodies read to their end; bufs the
// bodies buffered for their form or id.
var (
	hashes = sync.Pool{New: func() any { return sha256.New() }}
	bufs   = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

type summingBody struct {
	io.ReadCloser
	h                  hash.Hash     // the bytes' sum; nil once summed
	buf                *bytes.Buffer // the body, for its form or id, or nil
	compare, idPointer string
	facts              *bodyFacts
	created            bool // a 2xx: its id counts
	n                  int64
	header             http.Header
	sum                [sha256.Size]byte
}

func (b *summingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.h == nil { // summed already
		return n, err
	}
	b.h.Write(p[:n])
	b.n += int64(n)
	if b.buf != nil {
		if b.buf.Len()+n > maxFormBody {
			b.release() // too long: compared as bytes
		} else {
			b.buf.Write(p[:n])
		}
	}
	if err == io.EOF {
		// vegeta reads to EOF before it takes the header map into the
		// result, in the same goroutine.
		b.finish()
	}
	return n, err
}

// finish sets the headers from what was read and returns the buffers.
func (b *summingBody) finish() {
	raw := formatSum(b.h.Sum(b.sum[:0]), b.n)
	b.h.Reset()
	hashes.Put(b.h)
	b.h = nil
	f := facts{form: raw}
	if b.buf != nil {
		// The body fitted: its form (json) and id, cached by its bytes.
		f = b.facts.of(raw, b.buf.Bytes(), b.compare, b.idPointer)
	}
	if b.compare == apispec.CompareStatus {
		f.form = statusOnlySum // the status alone is compared
	}
	b.header[bodySumHeader] = []string{f.form}
	if f.id != "" && b.created {
		b.header[createdIDHeader] = []string{f.id}
	}
	b.release()
}

func (b *summingBody) release() {
	if b.buf != nil {
		b.buf.Reset()
		bufs.Put(b.buf)
		b.buf = nil
	}
}

func formatSum(sum []byte, n int64) string {
	b := make([]byte, 0, 2*sha256.Size+21)
	b = strconv.AppendInt(append(hex.AppendEncode(b, sum), ' '), n, 10)
	return string(b)
}

// bodySum is r's body sum: the transport's, or computed from r.Body for
// results written before the header existed.
func bodySum(r *vegeta.Result) string {
	if v := r.Headers[bodySumHeader]; len(v) == 1 {
		return v[0]
	}
	sum := sha256.Sum256(r.Body)
	return formatSum(sum[:], int64(len(r.Body)))
}

// createdID is the created id the transport found in r's body ("" when
// none, or no id_pointer).
func createdID(r *vegeta.Result) string {
	if v := r.Headers[createdIDHeader]; len(v) == 1 {
		return v[0]
	}
	return ""
}

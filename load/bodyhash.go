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

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/scenarios"
)

// bodySumHeader carries, on each response the runner reads, the SHA-256
// and length of what the replay check compares of the body ("<hex>
// <bytes>"): the body itself, or its scenarios.ReplayForm under the
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
}

func (t sumTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	// A server's own values must not count.
	delete(resp.Header, bodySumHeader)
	delete(resp.Header, createdIDHeader)
	b := &summingBody{ReadCloser: resp.Body, h: hashes.Get().(hash.Hash), header: resp.Header, compare: t.compare}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		b.idPointer = t.idPointer
	}
	if t.compare == scenarios.CompareJSON || b.idPointer != "" {
		b.buf = bufs.Get().(*bytes.Buffer)
	}
	resp.Body = b
	return resp, nil
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
	switch {
	case b.compare == scenarios.CompareStatus:
		sum := sha256.Sum256(nil) // the status alone is compared
		b.header[bodySumHeader] = []string{formatSum(sum[:], 0)}
	case b.compare == scenarios.CompareJSON && b.buf != nil:
		form := scenarios.ReplayForm(b.compare, b.buf.Bytes())
		sum := sha256.Sum256(form)
		b.header[bodySumHeader] = []string{formatSum(sum[:], int64(len(form)))}
	default:
		b.header[bodySumHeader] = []string{formatSum(b.h.Sum(b.sum[:0]), b.n)}
	}
	if b.buf != nil && b.idPointer != "" {
		if id := chaos.JSONPointer(b.buf.Bytes(), b.idPointer); id != "" {
			b.header[createdIDHeader] = []string{id}
		}
	}
	b.h.Reset()
	hashes.Put(b.h)
	b.h = nil
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

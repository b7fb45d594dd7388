package load

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// bodySumHeader carries, on each response the runner reads, the SHA-256
// and length of what the replay check compares of the body ("<hex>
// <bytes>"): the body itself, or its apispec.ReplayForm under the
// profile's replay_compare, computed from the answer as it is read. The
// check compares these sums, so a result keeps only an evidence prefix of
// each body instead of a copy of it; results files keep the header, so
// `load report` compares the same sums.
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

// replaySums is what the replay check reads of each answer, set as
// bodySumHeader (and createdIDHeader) on the result's header by
// wholeBody, from the whole answer (a carrier's Do, or the direct send's
// body read into a recycled buffer).
type replaySums struct {
	compare   string // the profile's replay_compare ("": bytes)
	idPointer string
	facts     *bodyFacts // what the bodies seen showed, by their bytes' sum
	headers   sync.Pool  // http.Header maps past smallHeader (withSums)
}

// needsBody reports whether the sums of a body need the body itself, not
// only its bytes' sum: its JSON form (compare json), its created id (a
// 2xx with an id_pointer).
func (s *replaySums) needsBody(created bool) bool {
	return s.compare == apispec.CompareJSON || (created && s.idPointer != "")
}

// set is h with the sums of the body whose bytes sum is k; body is the
// whole body when it was kept (needsBody, within maxFormBody), else nil.
func (s *replaySums) set(h http.Header, k sumKey, body []byte, created bool) http.Header {
	f := s.facts.of(k, body, s.compare, s.idPointer)
	form := f.form
	if s.compare == apispec.CompareStatus {
		form = statusOnlyValue // the status alone is compared
	}
	id := f.id
	if !created {
		id = nil
	}
	return s.withSums(h, form, id)
}

// smallHeader is how many entries a Go map holds before its first
// growth (one swiss-table group): a server's header of 8 fields (the
// reference's replay) would grow into a table, about 700 bytes, for the
// sums alone.
const smallHeader = 8

// withSums is h with the sums set: h itself when they fit without
// growing it, else a copy in a recycled map (sink.recycle returns it
// once its result is read), so a hit allocates no header table.
func (s *replaySums) withSums(h http.Header, form, id []string) http.Header {
	n := 1
	if id != nil {
		n++
	}
	if len(h)+n > smallHeader {
		big, _ := s.headers.Get().(http.Header)
		if big == nil {
			big = make(http.Header, 2*smallHeader)
		}
		for k, v := range h {
			big[k] = v
		}
		h = big
	}
	h[bodySumHeader] = form
	if id != nil {
		h[createdIDHeader] = id
	}
	return h
}

// recycle takes back a result's header once nothing reads it any more
// (the sink, after the collector, the results file and the plot).
func (s *replaySums) recycle(h http.Header) {
	if len(h) > smallHeader {
		clear(h)
		s.headers.Put(h)
	}
}

// wholeBody is h with the sums of an answer read whole, replacing any the
// server sent.
func (s *replaySums) wholeBody(h http.Header, status int, body []byte) http.Header {
	delete(h, bodySumHeader)
	delete(h, createdIDHeader)
	created := status >= 200 && status < 300
	k := sumKey{sum: sha256.Sum256(body), n: int64(len(body))}
	if !s.needsBody(created) || len(body) > maxFormBody {
		body = nil // too long to decode: compared as bytes
	}
	return s.set(h, k, body, created)
}

// bodyFacts maps a body's bytes sum to what the check reads of it: the
// sum's text, its JSON form's sum and its created id, each as the header
// value the transport sets. A replay repeats its original's bytes (or
// should), so a hit costs a lookup: no decode (about 15 µs and 50
// allocations for a 200-byte body here) and no allocation at all. The
// header values are shared by every result of the same bytes: read-only.
// Bounded: past maxFacts bodies it stops remembering.
type bodyFacts struct {
	mu sync.RWMutex
	m  map[sumKey]*facts
}

// sumKey is a body's SHA-256 and length.
type sumKey struct {
	sum [sha256.Size]byte
	n   int64
}

type facts struct {
	form, id []string // the header values: form sum; created id (nil: none)
	fromBody bool     // form and id were taken from the whole body
}

const maxFacts = 1 << 16

// of returns the facts of the body whose bytes sum is k; body is the
// whole body when it was buffered (compare json, an idPointer on a 2xx),
// else nil: its form is then its bytes and it shows no id.
func (c *bodyFacts) of(k sumKey, body []byte, compare, idPointer string) *facts {
	c.mu.RLock()
	f, ok := c.m[k]
	c.mu.RUnlock()
	if ok && (f.fromBody || body == nil) {
		return f
	}
	f = &facts{fromBody: body != nil}
	form := formatSum(k.sum[:], k.n)
	if body != nil && compare == apispec.CompareJSON {
		b := apispec.ReplayForm(compare, body)
		sum := sha256.Sum256(b)
		form = formatSum(sum[:], int64(len(b)))
	}
	f.form = []string{form}
	if body != nil && idPointer != "" {
		if id := jsonx.PointerText(body, idPointer); id != "" {
			f.id = []string{id}
		}
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[sumKey]*facts{}
	}
	if len(c.m) < maxFacts {
		c.m[k] = f
	}
	c.mu.Unlock()
	return f
}

// statusOnlyValue is the header value of statusOnlySum.
var statusOnlyValue = []string{statusOnlySum}

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

package load

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"strconv"
	"sync"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// bodySumHeader carries, on each response the runner reads, the SHA-256
// and length of the whole body ("<hex> <bytes>"), computed while vegeta
// reads it. The replay check compares these sums, so vegeta keeps only an
// evidence prefix of each body instead of a copy of it; results files keep
// the header, so `load report` compares the same sums.
const bodySumHeader = "Idemcheck-Body-Sha256"

// evidenceBytes is the body prefix kept per result: enough for clip to
// quote and to show whether it cut.
const evidenceBytes = clipBytes + 1

// sumTransport sets bodySumHeader on every response whose body is read to
// its end.
type sumTransport struct{ base http.RoundTripper }

func (t sumTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	delete(resp.Header, bodySumHeader) // a server's own value must not count
	resp.Body = &summingBody{ReadCloser: resp.Body, h: hashes.Get().(hash.Hash), header: resp.Header}
	return resp, nil
}

// hashes recycles the digests of bodies read to their end.
var hashes = sync.Pool{New: func() any { return sha256.New() }}

type summingBody struct {
	io.ReadCloser
	h      hash.Hash
	n      int64
	header http.Header
	sum    [sha256.Size]byte
}

func (b *summingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.h == nil { // summed already
		return n, err
	}
	b.h.Write(p[:n])
	b.n += int64(n)
	if err == io.EOF && b.h != nil {
		// vegeta reads to EOF before it takes the header map into the
		// result, in the same goroutine.
		b.header[bodySumHeader] = []string{formatSum(b.h.Sum(b.sum[:0]), b.n)}
		b.h.Reset()
		hashes.Put(b.h)
		b.h = nil
	}
	return n, err
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

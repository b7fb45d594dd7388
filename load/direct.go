package load

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// directHTTP sends the requests of a wire.Verbatim carrier (plain HTTP,
// a key in the JSON body) on the paced client, as built, straight to the
// run's transport. It is what a vegeta worker does less the work a load
// run does not need: vegeta's Target.Request parses the URL and copies
// the header map per request, adds two X-Vegeta-* fields, and sends
// through http.Client, which copies the header again for redirects, sets
// GetBody (so the transport's NoReplay guard clones the request a third
// time) and starts a goroutine and a timer per request for its timeout.
// Here a target's header is shared read-only (a RoundTripper never
// modifies its request), its URL is parsed once, the body carries no
// GetBody (nothing to guard), and the timeout is a context deadline.
// Redirects were never followed (a 303 is the answer). The replay check's
// sums are taken from the body read whole into a recycled buffer, as the
// paced client takes them from a carrier's answer (replaySums.wholeBody).
type directHTTP struct {
	rt      http.RoundTripper
	timeout time.Duration

	mu   sync.RWMutex
	urls map[string]*url.URL // read-only once stored
}

// maxURLs bounds the parsed URLs kept: a run sends to a few (one per
// replica and operation) unless setup: binds an id into each path.
const maxURLs = 1 << 12

// noHeader is the header of a target without one: shared, never written.
var noHeader = http.Header{}

// bodyBufs recycles the buffers answers are read into.
var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (d *directHTTP) url(s string) (*url.URL, error) {
	d.mu.RLock()
	u, ok := d.urls[s]
	d.mu.RUnlock()
	if ok {
		return u, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.urls == nil {
		d.urls = map[string]*url.URL{}
	}
	if len(d.urls) < maxURLs {
		d.urls[s] = u
	}
	d.mu.Unlock()
	return u, nil
}

// send makes tgt's request to u (its URL without the fragment) and fills
// res as vegeta's Attacker.hit would: the status, the header (with the
// replay sums when sums is set), the body cut at maxBody (-1: whole), and
// a non-2xx/3xx answer's status line as its error.
func (d *directHTTP) send(res *vegeta.Result, tgt *vegeta.Target, u string, sums *replaySums, maxBody int64) {
	fail := func(err error) { res.Error = (&url.Error{Op: methodOp(tgt.Method), URL: u, Err: err}).Error() }
	pu, err := d.url(u)
	if err != nil {
		fail(err)
		return
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if d.timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, d.timeout, fmt.Errorf("no answer within the %s timeout", d.timeout))
	}
	defer cancel()
	h := tgt.Header
	if h == nil {
		h = noHeader // the transport refuses a nil one
	}
	req := &http.Request{Method: tgt.Method, URL: pu, Host: pu.Host, Header: h,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	if host := h.Get("Host"); host != "" { // a configured Host field names the virtual host, as in vegeta
		req.Host = host
	}
	if len(tgt.Body) > 0 {
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(tgt.Body)), int64(len(tgt.Body))
	}
	resp, err := d.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		fail(causeOf(ctx, err))
		return
	}
	buf := bodyBufs.Get().(*bytes.Buffer)
	defer func() { buf.Reset(); bodyBufs.Put(buf) }()
	_, err = buf.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		fail(causeOf(ctx, err))
		return
	}
	body := buf.Bytes()
	h = resp.Header
	if sums != nil {
		h = sums.wholeBody(h, resp.StatusCode, body)
	}
	res.BytesIn, res.BytesOut = uint64(len(body)), uint64(len(tgt.Body))
	if maxBody >= 0 && int64(len(body)) > maxBody {
		body = body[:maxBody]
	}
	if len(body) > 0 {
		res.Body = bytes.Clone(body)
	}
	res.Code = uint16(resp.StatusCode)
	if res.Code < 200 || res.Code >= 400 {
		res.Error = resp.Status
	}
	res.Headers = h
}

// causeOf is err, or the deadline's cause when ctx ran out: the result
// says the request timed out, not only "context deadline exceeded".
func causeOf(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && c != context.Canceled {
		return fmt.Errorf("%w (%v)", err, c)
	}
	return err
}

// methodOp is the method as net/http's url.Error names it ("Post").
func methodOp(m string) string {
	if m == "" {
		return "Get"
	}
	return m[:1] + strings.ToLower(m[1:])
}

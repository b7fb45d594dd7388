package chaos_test

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// counter is a tiny upstream with no idempotency at all: every request
// that arrives whole executes and creates a fresh id, so the tests can
// count exactly what the proxy forwarded.
type counter struct {
	execs   atomic.Int64
	partial atomic.Int64 // requests whose body arrived incomplete
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(r.Body); err != nil {
		c.partial.Add(1)
		http.Error(w, "incomplete body", http.StatusBadRequest)
		return
	}
	n := c.execs.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":"ch_%d","padding":"%s"}`, n, strings.Repeat("x", 64))
}

// front is a proxy's listening side: the proxy's own HTTP/1.1 loop
// (chaos.Listen) or net/http's server with the Proxy as its handler.
type front struct {
	URL   string
	Close func()
}

var fronts = []struct {
	name  string
	start func(t *testing.T, p *chaos.Proxy) *front
}{
	{"own loop", func(t *testing.T, p *chaos.Proxy) *front {
		s, err := chaos.Listen(p)
		if err != nil {
			t.Fatal(err)
		}
		return &front{s.URL, func() { _ = s.Close() }}
	}},
	{"net/http", func(_ *testing.T, p *chaos.Proxy) *front {
		s := httptest.NewServer(p)
		return &front{s.URL, s.Close}
	}},
}

// startProxy runs a proxy with rules in front of up on the proxy's own
// loop; the history goes to buf.
func startProxy(t *testing.T, up http.Handler, rules ...string) (*front, *chaos.Proxy, *recorded) {
	t.Helper()
	return startProxyOn(t, fronts[0].start, up, rules...)
}

// startProxyOn is startProxy with the given front.
func startProxyOn(t *testing.T, start func(*testing.T, *chaos.Proxy) *front, up http.Handler, rules ...string) (*front, *chaos.Proxy, *recorded) {
	t.Helper()
	upstream := httptest.NewServer(up)
	var buf bytes.Buffer
	h := chaos.NewHistory(&buf)
	p, err := chaos.New(upstream.URL, chaos.WithHistory(h), chaos.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if _, err := p.AddRule(r); err != nil {
			t.Fatal(err)
		}
	}
	front := start(t, p)
	t.Cleanup(func() {
		front.Close()
		p.Close()
		upstream.Close()
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return front, p, &recorded{h, &buf}
}

// recorded is a proxy's history in memory.
type recorded struct {
	h   *chaos.History
	buf *bytes.Buffer
}

func post(t *testing.T, c *http.Client, url, key, body string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/v1/charges", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// events returns the history once it has want lines (a handler that
// hijacked its connection may still be finishing after the server closed).
func events(t *testing.T, rec *recorded, want int) []chaos.Event {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if err := rec.h.Flush(); err != nil {
			t.Fatal(err)
		}
		if bytes.Count(rec.buf.Bytes(), []byte("\n")) >= want {
			break
		}
	}
	var out []chaos.Event
	for _, line := range bytes.Split(bytes.TrimSpace(rec.buf.Bytes()), []byte("\n")) {
		var ev chaos.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("history line %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

func TestFaults(t *testing.T) {
	body := `{"amount":1000,"currency":"usd"}`
	cases := []struct {
		spec        string
		explanation string
		execs       int64 // upstream executions
		partial     int64 // upstream saw an incomplete body
		clientErr   bool  // the client gets no complete response
		status      int   // else: the status it gets
		upstream    int   // forwarded copies in the history
		client      string
	}{
		{"", "no fault: forwarded once, answered", 1, 0, false, 201, 1, chaos.ClientOK},
		{"drop-response", "the upstream commits, the client gets EOF", 1, 0, true, 0, 1, chaos.ClientUnknown},
		{"drop-response:mode=rst", "as drop-response, with a TCP reset", 1, 0, true, 0, 1, chaos.ClientUnknown},
		{"drop-request", "never forwarded, the client gets EOF", 0, 0, true, 0, 0, chaos.ClientUnknown},
		{"delay:before=20ms,after=20ms", "late but whole", 1, 0, false, 201, 1, chaos.ClientOK},
		{"reset-midbody", "status and half the body, then a reset", 1, 0, true, 0, 1, chaos.ClientUnknown},
		{"duplicate", "two concurrent copies upstream, the client gets one answer", 2, 0, false, 201, 2, chaos.ClientOK},
		{"duplicate:mode=sequential", "two copies one after the other", 2, 0, false, 201, 2, chaos.ClientOK},
		{"status:code=503", "a 503 made up by the proxy, nothing forwarded", 0, 0, false, 503, 0, chaos.ClientFail},
		{"truncate-request:bytes=5", "the upstream gets 5 body bytes and a close", 0, 1, true, 0, 1, chaos.ClientUnknown},
	}
	for _, fe := range fronts {
		for _, tc := range cases {
			t.Run(fe.name+"/"+tc.spec, func(t *testing.T) {
				up := &counter{}
				var rules []string
				if tc.spec != "" {
					rules = append(rules, tc.spec)
				}
				front, _, buf := startProxyOn(t, fe.start, up, rules...)
				c := wire.NewClient(5 * time.Second)
				defer c.CloseIdleConnections()
				resp, _, err := post(t, c, front.URL, "k1", body)
				if tc.clientErr != (err != nil) {
					t.Fatalf("%s: client error = %v, want error: %v", tc.explanation, err, tc.clientErr)
				}
				if !tc.clientErr {
					if resp.StatusCode != tc.status {
						t.Errorf("%s: status %d, want %d", tc.explanation, resp.StatusCode, tc.status)
					}
					kind, _, _ := strings.Cut(tc.spec, ":")
					if got := resp.Header.Get(chaos.FaultHeader); got != kind {
						t.Errorf("%s: %s header %q, want %q", tc.explanation, chaos.FaultHeader, got, kind)
					}
				}
				// The upstream may still be reading a truncated body.
				deadline := time.Now().Add(2 * time.Second)
				for up.partial.Load() < tc.partial && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if up.execs.Load() != tc.execs || up.partial.Load() != tc.partial {
					t.Errorf("%s: upstream executions %d (partial %d), want %d (%d)", tc.explanation, up.execs.Load(), up.partial.Load(), tc.execs, tc.partial)
				}
				front.Close() // waits for the handler, so the history line is written
				evs := events(t, buf, 1)
				if len(evs) != 1 {
					t.Fatalf("history has %d lines, want 1", len(evs))
				}
				ev := evs[0]
				if ev.Key != "k1" || ev.Attempt != 1 || len(ev.Upstream) != tc.upstream || ev.Client != tc.client {
					t.Errorf("%s: history %+v: want key k1, attempt 1, %d upstream copies, client %s", tc.explanation, ev, tc.upstream, tc.client)
				}
				if tc.execs > 0 && ev.Upstream[0].ID == "" {
					t.Errorf("%s: history lacks the created id: %+v", tc.explanation, ev.Upstream[0])
				}
			})
		}
	}
}

// A request is selected by the Nth attempt of its key: dropping attempt 1
// only lets the retry through.
func TestSelectByAttempt(t *testing.T) {
	up := &counter{}
	front, p, _ := startProxy(t, up, "drop-response:attempt=1")
	c := wire.NewClient(5 * time.Second)
	defer c.CloseIdleConnections()
	if _, _, err := post(t, c, front.URL, "k", "{}"); err == nil {
		t.Fatal("attempt 1: want a dropped response")
	}
	resp, _, err := post(t, c, front.URL, "k", "{}")
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("attempt 2: %v %v, want 201", resp, err)
	}
	if got := p.Counters(); got.Faults["drop-response"] != 1 || got.Requests != 2 || got.Forwarded != 2 {
		t.Errorf("counters %+v: want 2 requests, 2 forwarded, 1 drop-response", got)
	}
}

// Matching by method, path and header: only the selected requests fault.
func TestSelectByMatch(t *testing.T) {
	up := &counter{}
	front, _, _ := startProxy(t, up, "status:method=POST,path=/v1/refunds,header=X-Chaos:yes")
	c := wire.NewClient(5 * time.Second)
	defer c.CloseIdleConnections()
	cases := []struct {
		path, header string
		want         int
	}{
		{"/v1/refunds", "yes", 503},
		{"/v1/refunds", "", 201},
		{"/v1/charges", "yes", 201},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest("POST", front.URL+tc.path, strings.NewReader("{}"))
		if tc.header != "" {
			req.Header.Set("X-Chaos", tc.header)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s X-Chaos=%q: %d, want %d", tc.path, tc.header, resp.StatusCode, tc.want)
		}
	}
}

// The same seed and arrival order give the same faults.
func TestSeededSelection(t *testing.T) {
	run := func() string {
		up := &counter{}
		front, _, _ := startProxy(t, up, "status:0.5")
		c := wire.NewClient(5 * time.Second)
		defer c.CloseIdleConnections()
		var b strings.Builder
		for i := range 40 {
			resp, _, err := post(t, c, front.URL, fmt.Sprint(i), "{}")
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprint(&b, resp.StatusCode/100)
		}
		return b.String()
	}
	a, b := run(), run()
	if a != b || !strings.Contains(a, "5") || !strings.Contains(a, "2") {
		t.Errorf("seeded runs differ or never/always fault: %s vs %s", a, b)
	}
}

// feasibility §5: the default Go client silently re-sends a POST carrying
// Idempotency-Key when its reused connection dies; the no-replay client
// does not. Through a proxy that drops a response after the upstream
// committed, the plain client double-executes and reports success: its
// caller never learns that anything went wrong.
func TestPlainClientDoubleExecutes(t *testing.T) {
	cases := []struct {
		name    string
		client  *http.Client
		want    int64
		wantErr bool
	}{
		{"plain http.Client", &http.Client{Transport: &http.Transport{}}, 2, false},
		{"wire.NewClient", wire.NewClient(5 * time.Second), 1, true},
	}
	for _, fe := range fronts {
		for _, tc := range cases {
			t.Run(fe.name+"/"+tc.name, func(t *testing.T) {
				up := &counter{}
				front, _, _ := startProxyOn(t, fe.start, up, "drop-response:attempt=2")
				defer tc.client.CloseIdleConnections()
				// Attempt 1 of another key warms a keep-alive connection.
				if resp, _, err := post(t, tc.client, front.URL, "warm", "{}"); err != nil || resp.StatusCode != 201 {
					t.Fatalf("warm-up: %v", err)
				}
				// Two attempts of one key: the second is dropped after commit.
				if _, _, err := post(t, tc.client, front.URL, "k", "{}"); err != nil {
					t.Fatal(err)
				}
				up.execs.Store(0)
				_, _, err := post(t, tc.client, front.URL, "k", "{}")
				if (err != nil) != tc.wantErr {
					t.Errorf("client error %v, want error: %v", err, tc.wantErr)
				}
				if got := up.execs.Load(); got != tc.want {
					t.Errorf("upstream executions for one client call: %d, want %d", got, tc.want)
				}
			})
		}
	}
}

func TestUpstreamDown(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	p, err := chaos.New(dead.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, fe := range fronts {
		front := fe.start(t, p)
		c := wire.NewClient(5 * time.Second)
		resp, b, err := post(t, c, front.URL, "k", "{}")
		c.CloseIdleConnections()
		front.Close()
		if err != nil {
			t.Fatalf("%s: %v", fe.name, err)
		}
		if resp.StatusCode != 502 || resp.Header.Get(chaos.FaultHeader) != "upstream" || !bytes.Contains(b, []byte("connection refused")) {
			t.Errorf("%s: got %d %q %s: want 502, %s: upstream, and the dial error", fe.name, resp.StatusCode, resp.Header.Get(chaos.FaultHeader), b, chaos.FaultHeader)
		}
	}
}

func TestConcurrentHistory(t *testing.T) {
	up := &counter{}
	front, _, buf := startProxy(t, up, "drop-response:0.3", "duplicate:0.1")
	c := wire.NewClient(5 * time.Second)
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 25 {
				_, _, _ = post(t, c, front.URL, fmt.Sprintf("k%d-%d", i, j), "{}")
			}
		})
	}
	wg.Wait()
	front.Close()
	if n := len(events(t, buf, 200)); n != 200 {
		t.Errorf("history lines: %d, want 200", n)
	}
}

// TestNewRejectsBadIDPointer: an id pointer that is not RFC 6901 would
// record every id as empty, so New refuses it and names the value.
func TestNewRejectsBadIDPointer(t *testing.T) {
	for _, ptr := range []string{"id", "/a~2"} {
		if _, err := chaos.New("http://127.0.0.1:1", chaos.WithIDPointer(ptr)); err == nil || !strings.Contains(err.Error(), ptr) {
			t.Errorf("New(IDPointer %q) error = %v, want one naming it", ptr, err)
		}
	}
}

// TestHTTPSUpstream: the proxy's own pool reaches an https upstream whose
// certificate a private CA signs, on both of its paths (the byte pump
// without a history, the parsing path with one), and refuses it without
// that CA.
func TestHTTPSUpstream(t *testing.T) {
	pki := demotest.NewPKI(t)
	var up counter
	upstream := pki.ServeTLS(t, &up, false)
	roots, err := apispec.TLS{CACert: pki.CAFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		tls         *tls.Config
		history     bool
		status      int
		explanation string
	}{
		{"pump", roots, false, http.StatusCreated, "no history: the byte pump over a TLS connection"},
		{"parsed", roots, true, http.StatusCreated, "with a history: the parsing path"},
		{"untrusted", nil, false, http.StatusBadGateway, "the system roots do not trust the private CA: 502 naming the upstream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := []chaos.Option{chaos.WithTLS(tc.tls)}
			if tc.history {
				opts = append(opts, chaos.WithHistory(chaos.NewHistory(io.Discard)))
			}
			p, err := chaos.New(upstream, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			s, err := chaos.Listen(p)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			c := wire.NewClient(5 * time.Second)
			defer c.CloseIdleConnections()
			resp, b, err := post(t, c, s.URL, "k-"+tc.name, "{}")
			if err != nil || resp.StatusCode != tc.status {
				t.Fatalf("%s: %v %v %s, want %d", tc.explanation, resp, err, b, tc.status)
			}
		})
	}
}

// TestGzipCodedID: an upstream that gzips its answer for a client that
// accepts it still has its created id recorded (read through the coding),
// so the checker can tell a committed execution.
func TestGzipCodedID(t *testing.T) {
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusCreated)
		zw := gzip.NewWriter(w)
		_, _ = zw.Write([]byte(`{"id":"ch_gz","amount":1000}`))
		_ = zw.Close()
	})
	front, _, rec := startProxy(t, up)
	c := &http.Client{Timeout: 5 * time.Second} // accepts gzip and decodes it
	defer c.CloseIdleConnections()
	resp, body, err := post(t, c, front.URL, "gz-1", `{"amount":1000}`)
	if err != nil || resp.StatusCode != http.StatusCreated || !strings.Contains(string(body), "ch_gz") {
		t.Fatalf("through the proxy: %v %v %s", err, resp, body)
	}
	evs := events(t, rec, 1)
	if len(evs) != 1 || len(evs[0].Upstream) != 1 || evs[0].Upstream[0].ID != "ch_gz" {
		t.Fatalf("recorded %+v, want the upstream's id ch_gz", evs)
	}
}

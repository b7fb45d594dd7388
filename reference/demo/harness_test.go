package demo

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/reference"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is a demo app behind a real loopback HTTP server.
type harness struct {
	t      *testing.T
	opts   Options // what app was built with (a second replica copies it)
	app    *App
	srv    *httptest.Server
	client *http.Client
}

func newHarness(t *testing.T, o Options) *harness { return newHarnessProto(t, o, false) }

// newHarnessProto serves over HTTP/1.1, or, with h2c, over HTTP/2 with
// prior knowledge (the server takes both on one port; the client speaks
// HTTP/2 only, so every reply says which protocol carried it).
func newHarnessProto(t *testing.T, o Options, h2c bool) *harness {
	t.Helper()
	app, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	// Field names as sent are kept, for the exact-key-spelling defect;
	// every test here then also runs through that reader.
	srv := httptest.NewUnstartedServer(app)
	srv.Listener = reference.KeepFieldSpelling(srv.Config, srv.Listener)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	if h2c {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetHTTP1(true)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	srv.Start()
	h := &harness{t: t, opts: o, app: app, srv: srv, client: &http.Client{Transport: tr, Timeout: 20 * time.Second}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
		if err := app.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

type reply struct {
	status int
	header http.Header
	body   string
	proto  string // HTTP/1.1 or HTTP/2.0
}

// json decodes the reply body into a map.
func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.body), &m); err != nil {
		t.Fatalf("reply %d body %q is not JSON: %v", r.status, r.body, err)
	}
	return m
}

const chargeBody = `{"amount":1000,"currency":"usd","description":"idemcheck"}`

// post sends POST path as user (empty: no Authorization) with key (empty:
// no Idempotency-Key; written verbatim, so quote it for sf-string form).
func (h *harness) post(path, user, key, body string) reply {
	h.t.Helper()
	hdr := http.Header{"Content-Type": {"application/json"}}
	if user != "" {
		hdr.Set("Authorization", "Bearer "+user)
	}
	if key != "" {
		hdr.Set("Idempotency-Key", key)
	}
	return h.do("POST", path, hdr, body)
}

func (h *harness) do(method, path string, hdr http.Header, body string) reply {
	h.t.Helper()
	req, err := http.NewRequest(method, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatalf("NewRequest: %v", err)
	}
	req.Header = hdr
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("read body: %v", err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b), proto: resp.Proto}
}

// executions reads the effects oracle for key (unquoted); an empty key
// reads the totals.
func (h *harness) executions(key string) (total, charges, refunds int) {
	h.t.Helper()
	path := "/v1/effects"
	if key != "" {
		path += "?key=" + url.QueryEscape(key)
	}
	r := h.do("GET", path, http.Header{}, "")
	var rep struct {
		Executions  int `json:"executions"`
		ByOperation struct {
			Charges int `json:"charges"`
			Refunds int `json:"refunds"`
		} `json:"by_operation"`
	}
	if err := json.Unmarshal([]byte(r.body), &rep); err != nil {
		h.t.Fatalf("effects: %v (%q)", err, r.body)
	}
	return rep.Executions, rep.ByOperation.Charges, rep.ByOperation.Refunds
}

// waitExecutions polls the oracle until key has n executions: the way to
// know a slow request is provably in flight.
func (h *harness) waitExecutions(key string, n int) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got, _, _ := h.executions(key); got >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("key %s never reached %d executions", key, n)
}

// lastByteBurst sends n POST /v1/charges requests under key (sf-string
// quoted) as alice, each on its own connection, every request but its last
// byte first, then, once the server has had time to take their headers,
// the last bytes together; it returns the statuses.
func (h *harness) lastByteBurst(n int, key, body string) []int {
	h.t.Helper()
	wire := "POST /v1/charges HTTP/1.1\r\nHost: demo\r\nAuthorization: Bearer alice\r\nContent-Type: application/json\r\n" +
		"Idempotency-Key: \"" + key + "\"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.DialTimeout("tcp", h.srv.Listener.Addr().String(), 5*time.Second)
		if err != nil {
			h.t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(c, wire[:len(wire)-1]); err != nil {
			h.t.Fatalf("write: %v", err)
		}
		conns[i] = c
	}
	time.Sleep(200 * time.Millisecond)
	for _, c := range conns {
		_, _ = io.WriteString(c, wire[len(wire)-1:])
	}
	statuses := make([]int, n)
	for i, c := range conns {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			h.t.Fatalf("read: %v", err)
		}
		resp.Body.Close()
		statuses[i] = resp.StatusCode
	}
	return statuses
}

var keySeq atomic.Int64

// newKey returns a key unique within the test binary.
func newKey() string {
	return "key-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatInt(keySeq.Add(1), 10)
}

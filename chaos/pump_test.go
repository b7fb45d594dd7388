package chaos_test

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/wire"
)

// seen is what an upstream received, as net/http parsed it.
type seen struct {
	method, uri, host, body string
	header                  http.Header
}

// echoUpstream records each request and answers in the shape its X-Resp
// field asks for.
type echoUpstream struct {
	mu   sync.Mutex
	reqs []seen
}

func (e *echoUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h := r.Header.Clone()
	e.mu.Lock()
	e.reqs = append(e.reqs, seen{r.Method, r.RequestURI, r.Host, string(b), h})
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Multi", "a")
	w.Header().Add("X-Multi", "b")
	switch r.Header.Get("X-Resp") {
	case "chunked": // flushed before the end: no Content-Length
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"part":1`))
		w.(http.Flusher).Flush()
		_, _ = w.Write([]byte(`,"part2":2}`))
	case "no-content":
		w.WriteHeader(http.StatusNoContent)
	case "not-modified": // Content-Length of the representation, no body
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusNotModified)
	case "close":
		w.Header().Set("Connection", "close")
		_, _ = fmt.Fprintf(w, `{"closing":true}`)
	case "early-hints":
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"hinted":true}`))
	default:
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"got":%q}`, b)
	}
}

// exchangeRaw sends raw on a fresh connection to url and reads one
// response.
func exchangeRaw(t *testing.T, url, raw, method string) (*http.Response, string) {
	t.Helper()
	conn, br := dialFront(t, url)
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", raw, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestPumpAnswersAsParsingPath: without rules or history the proxy pumps
// requests as bytes; with a rule that never matches it parses them. Both
// must deliver the same request upstream and the same answer to the
// client, for the shapes the pump takes and for those it hands back.
func TestPumpAnswersAsParsingPath(t *testing.T) {
	const body = `{"amount":1000}`
	cases := []struct {
		name, raw, method, why string
	}{
		{"post", "POST /v1/charges?x=1 HTTP/1.1\r\nHost: front\r\nIdempotency-Key: \"k1\"\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n" + body, "POST",
			"the common shape: pumped, Host rewritten, query kept"},
		{"get", "GET /v1/charges/ch_1 HTTP/1.1\r\nhost: front\r\n\r\n", "GET", "no body, lower-case field name"},
		{"chunked-response", "POST /v1/charges HTTP/1.1\r\nHost: front\r\nX-Resp: chunked\r\nContent-Length: 15\r\n\r\n" + body, "POST",
			"pumped request, chunked response: parsed and re-framed with Content-Length"},
		{"no-content", "DELETE /v1/charges/ch_1 HTTP/1.1\r\nHost: front\r\nX-Resp: no-content\r\n\r\n", "DELETE", "a 204 has no body"},
		{"not-modified", "GET /v1/charges/ch_1 HTTP/1.1\r\nHost: front\r\nX-Resp: not-modified\r\n\r\n", "GET",
			"a 304's Content-Length describes no body: parsed, never waited for"},
		{"upstream-closes", "POST /v1/charges HTTP/1.1\r\nHost: front\r\nX-Resp: close\r\nContent-Length: 15\r\n\r\n" + body, "POST",
			"the upstream's Connection: close is hop-by-hop: parsed, not passed on"},
		{"early-hints", "POST /v1/charges HTTP/1.1\r\nHost: front\r\nX-Resp: early-hints\r\nContent-Length: 15\r\n\r\n" + body, "POST",
			"a 103 before the answer: parsed, only the final answer is passed on"},
		{"chunked-request", "POST /v1/charges HTTP/1.1\r\nHost: front\r\nTransfer-Encoding: chunked\r\n\r\nf\r\n" + body + "\r\n0\r\n\r\n", "POST",
			"a chunked request body: not pumped"},
		{"client-connection-field", "POST /v1/charges HTTP/1.1\r\nHost: front\r\nConnection: keep-alive\r\nContent-Length: 15\r\n\r\n" + body, "POST",
			"a hop-by-hop request field: not pumped (it is stripped)"},
		{"expect", "POST /v1/charges HTTP/1.1\r\nHost: front\r\nExpect: 100-continue\r\nContent-Length: 15\r\n\r\n" + body, "POST",
			"Expect: not pumped (the proxy answers 100 Continue itself)"},
		{"http10", "POST /v1/charges HTTP/1.0\r\nHost: front\r\nContent-Length: 15\r\n\r\n" + body, "POST", "HTTP/1.0: not pumped"},
		{"head", "HEAD /v1/charges/ch_1 HTTP/1.1\r\nHost: front\r\n\r\n", "HEAD", "HEAD: not pumped (the answer has no body whatever it says)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got [2]seen
			var resps [2]*http.Response
			var bodies [2]string
			for i, rules := range [][]string{nil, {"status:code=500,path=/never"}} {
				up := &echoUpstream{}
				upstream := httptest.NewServer(up)
				p, err := chaos.New(upstream.URL)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rules {
					if _, err := p.AddRule(r); err != nil {
						t.Fatal(err)
					}
				}
				s, err := chaos.Listen(p)
				if err != nil {
					t.Fatal(err)
				}
				resps[i], bodies[i] = exchangeRaw(t, s.URL, c.raw, c.method)
				_ = s.Close()
				p.Close()
				upstream.Close()
				if len(up.reqs) != 1 {
					t.Fatalf("rules %v: upstream got %d requests, want 1", rules, len(up.reqs))
				}
				got[i] = up.reqs[0]
				if want := strings.TrimPrefix(upstream.URL, "http://"); got[i].host != want {
					t.Errorf("rules %v: upstream saw Host %q, want %q", rules, got[i].host, want)
				}
				if n := p.Counters(); n.Requests != 1 || n.Forwarded != 1 || n.UpstreamErrors != 0 {
					t.Errorf("rules %v: counters %+v, want 1 request forwarded", rules, n)
				}
			}
			pumped, parsed := got[0], got[1]
			// The parsing path adds Content-Length: 0 to a bodyless POST and
			// drops what it strips; compare what an upstream acts on.
			for _, h := range []http.Header{pumped.header, parsed.header} {
				h.Del("Content-Length")
			}
			if pumped.method != parsed.method || pumped.uri != parsed.uri || pumped.body != parsed.body ||
				!maps.EqualFunc(pumped.header, parsed.header, slices.Equal) {
				t.Errorf("%s: upstream saw\n pumped %+v\n parsed %+v", c.why, pumped, parsed)
			}
			a, b := resps[0], resps[1]
			a.Header.Del("Date")
			b.Header.Del("Date")
			if a.StatusCode != b.StatusCode || bodies[0] != bodies[1] || !maps.EqualFunc(a.Header, b.Header, slices.Equal) {
				t.Errorf("%s: client got\n pumped %d %v %q\n parsed %d %v %q", c.why, a.StatusCode, a.Header, bodies[0], b.StatusCode, b.Header, bodies[1])
			}
		})
	}
}

// TestPumpKeepsAttemptNumbers: pumped attempts are numbered like parsed
// ones, so a rule added later selects by the right attempt; and once a rule
// exists the proxy stops pumping. Keep-alive carries every request.
func TestPumpKeepsAttemptNumbers(t *testing.T) {
	up, _, p, s := frontedCounter(t)
	c := wire.NewClient(5 * time.Second)
	defer c.CloseIdleConnections()
	for i := range 2 {
		if resp, _, err := post(t, c, s.URL, "k", "{}"); err != nil || resp.StatusCode != 201 {
			t.Fatalf("pumped attempt %d: %v %v", i+1, resp, err)
		}
	}
	if _, err := p.AddRule("status:code=503,attempt=3"); err != nil {
		t.Fatal(err)
	}
	if resp, _, err := post(t, c, s.URL, "k", "{}"); err != nil || resp.StatusCode != 503 {
		t.Fatalf("attempt 3 after two pumped ones: %v %v, want the rule's 503", resp, err)
	}
	if n := p.Counters(); n.Requests != 3 || n.Forwarded != 2 || up.execs.Load() != 2 {
		t.Errorf("counters %+v, executions %d: want 3 requests, 2 forwarded and executed", n, up.execs.Load())
	}
}

// TestPumpPipelined: requests pipelined on one connection are answered in
// order, each once.
func TestPumpPipelined(t *testing.T) {
	up, _, _, s := frontedCounter(t)
	conn, br := dialFront(t, s.URL)
	const n = 5
	var raw strings.Builder
	for i := range n {
		fmt.Fprintf(&raw, postCharge, fmt.Sprint("p", i))
	}
	if _, err := io.WriteString(conn, raw.String()); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if want := fmt.Sprintf(`"ch_%d"`, i+1); resp.StatusCode != 201 || !strings.Contains(string(b), want) {
			t.Fatalf("answer %d: %d %s, want 201 with %s", i, resp.StatusCode, b, want)
		}
	}
	if up.execs.Load() != n {
		t.Fatalf("%d executions, want %d", up.execs.Load(), n)
	}
}

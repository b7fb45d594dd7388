package chaos_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/wire"
)

// dialFront opens a raw connection to a proxy front, for conversations
// net/http's client would not have (pipelining, malformed requests).
func dialFront(t *testing.T, url string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	return conn, bufio.NewReader(conn)
}

const postCharge = "POST /v1/charges HTTP/1.1\r\nHost: x\r\nIdempotency-Key: \"%s\"\r\nContent-Length: 2\r\n\r\n{}"

// The proxy's own HTTP/1.1 loop, case by case: what net/http's server
// would have done for the client, the loop does too.
func TestOwnLoop(t *testing.T) {
	cases := []struct {
		name        string
		explanation string
		send        string // raw bytes written at once
		want        []int  // statuses read in order
		execs       int64
		closed      bool // the proxy closes the connection after the answers
	}{
		{"pipelined", "three requests written at once get three answers in order on one connection",
			strings.Repeat(strings.Replace(postCharge, "%s", "k", 1), 3), []int{201, 201, 201}, 3, false},
		{"head", "HEAD is forwarded and answered without a body; the connection stays usable",
			"HEAD /v1/charges HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Replace(postCharge, "%s", "k", 1), []int{201, 201}, 2, false},
		{"malformed", "an unparsable request line gets 400 and a close, nothing forwarded",
			"NOT HTTP\r\n\r\n", []int{400}, 0, true},
		{"too large", "a body over the limit gets 413, and the connection is closed (its body was not read)",
			"POST /v1/charges HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n" + strings.Repeat("x", 200), []int{413}, 0, true},
		{"connection close", "Connection: close is honoured after the answer",
			"POST /v1/charges HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", []int{201}, 1, true},
		{"expect continue", "Expect: 100-continue gets the interim 100 first, then the answer",
			"POST /v1/charges HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}", []int{100, 201}, 1, false},
		{"http/1.0", "an HTTP/1.0 request without keep-alive is answered, then closed",
			"POST /v1/charges HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}", []int{201}, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := &counter{}
			upstream := httptest.NewServer(up)
			defer upstream.Close()
			p, err := chaos.New(upstream.URL, chaos.WithMaxBody(128))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			s, err := chaos.Listen(p)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			conn, br := dialFront(t, s.URL)
			if _, err := io.WriteString(conn, tc.send); err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.want {
				if want == 100 {
					line, err := br.ReadString('\n')
					if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
						t.Fatalf("%s: answer %d: %q %v, want 100 Continue", tc.explanation, i, line, err)
					}
					_, _ = br.ReadString('\n') // the blank line ending it
					continue
				}
				resp, err := http.ReadResponse(br, &http.Request{Method: methodOf(tc.send, i)})
				if err != nil {
					t.Fatalf("%s: answer %d: %v", tc.explanation, i, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("%s: answer %d: status %d, want %d", tc.explanation, i, resp.StatusCode, want)
				}
			}
			_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			_, err = br.ReadByte()
			gotClosed := err == io.EOF
			if gotClosed != tc.closed {
				t.Errorf("%s: connection closed after the answers: %v (read: %v), want %v", tc.explanation, gotClosed, err, tc.closed)
			}
			if got := up.execs.Load(); got != tc.execs {
				t.Errorf("%s: upstream executions %d, want %d", tc.explanation, got, tc.execs)
			}
		})
	}
}

// methodOf is the method of the i-th request in a case (HEAD only first).
func methodOf(send string, i int) string {
	if i == 0 && strings.HasPrefix(send, "HEAD ") {
		return http.MethodHead
	}
	return http.MethodPost
}

// A client that leaves during a delay ends the attempt: the request is
// never forwarded (the loop watches the connection while a fault runs).
func TestOwnLoopClientLeavesDuringDelay(t *testing.T) {
	up := &counter{}
	front, _, rec := startProxy(t, up, "delay:before=1500ms")
	conn, _ := dialFront(t, front.URL)
	if _, err := io.WriteString(conn, strings.Replace(postCharge, "%s", "gone", 1)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let the attempt start its delay
	conn.Close()
	evs := events(t, rec, 1)
	if len(evs) != 1 || len(evs[0].Upstream) != 0 || evs[0].Client != chaos.ClientUnknown {
		t.Fatalf("history %+v: want one attempt, not forwarded, client unknown", evs)
	}
	if got := up.execs.Load(); got != 0 {
		t.Errorf("upstream executions %d, want 0: the delay outlived its client", got)
	}
}

// An idle upstream connection the upstream closed is not used again: the
// next attempt dials, instead of failing with a 502 it did not deserve.
func TestUpstreamClosedIdleConnection(t *testing.T) {
	_, upstream, _, s := frontedCounter(t)
	c := wire.NewClient(5 * time.Second)
	defer c.CloseIdleConnections()
	for i := range 3 {
		resp, _, err := post(t, c, s.URL, "k", "{}")
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("attempt %d after the upstream closed its connections: %v %v, want 201", i+1, resp, err)
		}
		upstream.CloseClientConnections()
	}
}

// frontedCounter starts a counting upstream and the proxy (default
// options) on its own HTTP/1.1 loop in front of it; all close when t ends.
func frontedCounter(t *testing.T) (*counter, *httptest.Server, *chaos.Proxy, *chaos.Server) {
	t.Helper()
	up := &counter{}
	upstream := httptest.NewServer(up)
	t.Cleanup(upstream.Close)
	p, err := chaos.New(upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	s, err := chaos.Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return up, upstream, p, s
}

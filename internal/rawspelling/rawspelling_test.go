package rawspelling

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTransportWritesNamesVerbatim: a name put in the header map directly
// goes on the wire as spelled; Header.Set canonicalises. Read on a raw
// listener, so nothing between the client and the bytes rewrites them.
func TestTransportWritesNamesVerbatim(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	heads := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			heads <- ""
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		var head strings.Builder
		for {
			l, err := br.ReadString('\n')
			head.WriteString(l)
			if err != nil || l == "\r\n" {
				break
			}
		}
		heads <- head.String()
		_, _ = io.WriteString(c, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
	}()
	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/", strings.NewReader("{}"))
	req.Header.Set("x-set-by-set", "1")
	SetVerbatim(req.Header, "idempotency-key", `"a"`)
	SetVerbatim(req.Header, "IDEMPOTENCY-KEY", `"b"`) // replaces the other spelling
	SetVerbatim(req.Header, "api-VERSION", "2")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	head := <-heads
	for _, want := range []string{"\r\nIDEMPOTENCY-KEY: \"b\"\r\n", "\r\napi-VERSION: 2\r\n", "\r\nX-Set-By-Set: 1\r\n"} {
		if !strings.Contains(head, want) {
			t.Errorf("request head lacks %q:\n%s", want, head)
		}
	}
	if strings.Contains(strings.ToLower(head), "\"a\"") {
		t.Errorf("the replaced spelling was sent too:\n%s", head)
	}
}

type client struct {
	t   *testing.T
	srv *Server
	c   *http.Client
}

func start(t *testing.T, exact bool) *client {
	t.Helper()
	srv, err := Start(exact)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &client{t: t, srv: srv, c: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

type reply struct {
	status   int
	replayed bool
	body     string
}

// post sends POST /v1/charges with the key field under the given name
// spelling (none when name is "") and body; chunked sends the body
// without a length.
func (c *client) post(name, key, body string, chunked bool) reply {
	c.t.Helper()
	var rd io.Reader = strings.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd) // no length known: Transfer-Encoding: chunked
	}
	req, _ := http.NewRequest("POST", c.srv.URL+"/v1/charges", rd)
	req.Header.Set("Authorization", "Bearer alice")
	if name != "" {
		SetVerbatim(req.Header, name, `"`+key+`"`)
	}
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true", string(b)}
}

func TestSpelling(t *testing.T) {
	for _, exact := range []bool{false, true} {
		c := start(t, exact)
		// The retry under another spelling: one execution, replayed, in
		// the correct build; two in the bug.
		a := c.post("idempotency-key", "k1", "{}", false)
		b := c.post("IDEMPOTENCY-KEY", "k1", "{}", true)
		n := c.srv.Executions("k1")
		if exact {
			if n != 2 || b.replayed {
				t.Errorf("exact-spelling bug: %d executions, retry replayed=%v; want 2, not replayed", n, b.replayed)
			}
		} else if a.status != 201 || b.status != 201 || !b.replayed || b.body != a.body || n != 1 {
			t.Errorf("correct: first %d, retry %d replayed=%v same body=%v, %d executions; want one execution replayed", a.status, b.status, b.replayed, a.body == b.body, n)
		}
		// Spelled exactly, both builds honour the key.
		c.post("Idempotency-Key", "k2", "{}", false)
		if r := c.post("Idempotency-Key", "k2", "{}", false); !r.replayed || c.srv.Executions("k2") != 1 {
			t.Errorf("exact=%v: the exact spelling was not honoured (%d executions)", exact, c.srv.Executions("k2"))
		}
	}
}

func TestContract(t *testing.T) {
	c := start(t, false)
	if r := c.post("", "", "{}", false); r.status != 400 {
		t.Errorf("no key: %d", r.status)
	}
	c.post("idempotency-key", "m", `{"delay_ms":0}`, false)
	if r := c.post("idempotency-key", "m", `{"delay_ms":1}`, false); r.status != 422 {
		t.Errorf("another body under a used key: %d", r.status)
	}
	done := make(chan reply, 1)
	go func() { done <- c.post("idempotency-key", "f", `{"delay_ms":1000}`, false) }()
	deadline := time.Now().Add(5 * time.Second)
	for c.srv.Executions("f") == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if r := c.post("Idempotency-Key", "f", `{"delay_ms":1000}`, false); r.status != 409 {
		t.Errorf("retry in flight: %d", r.status)
	}
	if r := <-done; r.status != 201 {
		t.Errorf("slow original: %d", r.status)
	}
	resp, err := c.c.Get(c.srv.URL + "/v1/effects?key=f")
	if err != nil {
		t.Fatal(err)
	}
	var eff struct{ Executions int }
	_ = json.NewDecoder(resp.Body).Decode(&eff)
	resp.Body.Close()
	if eff.Executions != 1 {
		t.Errorf("effects oracle: %d executions, want 1", eff.Executions)
	}
}

// TestMalformed: a request the server cannot read gets 400 and the
// connection closes.
func TestMalformed(t *testing.T) {
	c := start(t, false)
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(conn, "POST /v1/charges HTTP/1.1\r\nno colon here\r\n\r\n")
	b, _ := io.ReadAll(conn)
	if !bytes.HasPrefix(b, []byte("HTTP/1.1 400 ")) || !bytes.Contains(b, []byte("Connection: close")) {
		t.Errorf("malformed field line: %q", b)
	}
}

package chaos_test

import (
	"bufio"
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/chaos"
)

const (
	benchReqBody  = `{"amount":1000,"currency":"usd"}`
	benchRespBody = `{"id":"ch_1","object":"charge","amount":1000,"currency":"usd"}`
)

// rawUpstream answers every request with the same bytes and allocates
// nothing per request, so a benchmark's allocations are the proxy's.
func rawUpstream(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	resp := []byte("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nDate: Tue, 24 Nov 2026 01:00:00 GMT\r\nContent-Length: " +
		strconv.Itoa(len(benchRespBody)) + "\r\n\r\n" + benchRespBody)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for skipRequest(br, len(benchReqBody)) == nil {
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	b.Cleanup(func() { ln.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// skipRequest consumes a head and a body of n bytes.
func skipRequest(br *bufio.Reader, n int) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if bytes.Equal(line, []byte("\r\n")) {
			_, err = br.Discard(n)
			return err
		}
	}
}

// benchProxy sends keyed POSTs over one keep-alive connection through a
// proxy with the given rules and reports allocations per request.
func benchProxy(b *testing.B, rules ...string) {
	p, err := chaos.New(rawUpstream(b))
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range rules {
		if _, err := p.AddRule(r); err != nil {
			b.Fatal(err)
		}
	}
	s, err := chaos.Listen(p)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	defer s.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	req := []byte("POST /v1/charges HTTP/1.1\r\nHost: proxy\r\nIdempotency-Key: \"bench\"\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(benchReqBody)) + "\r\n\r\n" + benchReqBody)
	br := bufio.NewReader(conn)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		if err := skipRequest(br, len(benchRespBody)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProxyNoRule: no rule and no history, the pump's case.
func BenchmarkProxyNoRule(b *testing.B) { benchProxy(b) }

// BenchmarkProxyParsed: a rule that never matches makes the proxy parse
// every request (the path faults take).
func BenchmarkProxyParsed(b *testing.B) { benchProxy(b, "status:path=/never") }

package reference

import (
	"slices"
	"strings"
	"testing"
)

// TestSpellingConnFraming: the reader follows the framing of pipelined
// requests (a Content-Length body, a chunked one with a trailer, none)
// whatever the sizes of the reads that deliver them, and records each
// request's key field names as sent, not bodies that look like fields.
func TestSpellingConnFraming(t *testing.T) {
	stream := "POST /a?x=1 HTTP/1.1\r\nHost: h\r\nidempotency-key: \"1\"\r\nContent-Length: 27\r\n\r\n" +
		"\r\nIdempotency-Key: \"no\"\r\n\r\n" +
		"POST /b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nIDEMPOTENCY-KEY: \"2\"\r\nIdempotency-Key: \"3\"\r\n\r\n" +
		"5;ext=1\r\nhello\r\n17\r\nIdempotency-Key: \"no\"\r\n\r\n0\r\nX-Trailer: 1\r\n\r\n" +
		"\r\nGET /c HTTP/1.1\r\nHost: h\r\n\r\n"
	want := []fieldSpelling{
		{"POST", "/a?x=1", []string{"idempotency-key"}},
		{"POST", "/b", []string{"IDEMPOTENCY-KEY", "Idempotency-Key"}},
		{"GET", "/c", nil},
	}
	for size := 1; size <= len(stream); size++ {
		c := &spellingConn{}
		for i := 0; i < len(stream); i += size {
			c.feed([]byte(stream[i:min(i+size, len(stream))]))
		}
		if c.state != stRequestLine || !slices.EqualFunc(c.queue, want, func(a, b fieldSpelling) bool {
			return a.method == b.method && a.target == b.target && slices.Equal(a.names, b.names)
		}) {
			t.Fatalf("reads of %d bytes: state %d, queue %+v; want %+v", size, c.state, c.queue, want)
		}
	}
	c := &spellingConn{}
	c.feed([]byte(stream))
	if _, ok := c.take("GET", "/c"); !ok || len(c.queue) != 0 {
		t.Fatalf("take skips the entries of requests no handler saw: %+v", c.queue)
	}
	if _, ok := c.take("GET", "/c"); ok {
		t.Fatal("an entry was taken twice")
	}
	for _, s := range []string{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", strings.Repeat("a", maxSpellingLine+1)} {
		c := &spellingConn{}
		c.feed([]byte(s))
		if c.state != stOff {
			t.Errorf("%.40q: state %d, want off (nothing more recorded)", s, c.state)
		}
	}
}

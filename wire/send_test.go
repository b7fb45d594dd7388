package wire

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestNotReached: an answer that failed before the server can have read
// the request says nothing of the server (NotReached): no connection at
// all (ErrNotConnected); an answered request is reached, and so is one
// the server took and then failed to answer.
func TestNotReached(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close() // nothing listens there: every dial is refused
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("no hijacker")
			return
		}
		c, _, err := hj.Hijack()
		if err == nil {
			c.Close() // read the request, then drop the connection unanswered
		}
	}))
	defer hang.Close()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer ok.Close()
	c := NewClient(5 * time.Second)
	defer c.CloseIdleConnections()
	for _, tc := range []struct {
		rule, url       string
		notReached, err bool
	}{
		{"a refused connection never reached the server", closed, true, true},
		{"a request read and dropped reached it", hang.URL, false, true},
		{"an answered request reached it", ok.URL, false, false},
	} {
		x := Exchange{Request: ExchangeRequest{Method: http.MethodPost, URL: tc.url + "/v1/charges", Header: http.Header{}, Body: []byte(`{}`)}}
		r, _ := HTTP{Client: c}.Do(context.Background(), x)
		if r.NotReached() != tc.notReached || (r.Err != nil) != tc.err || (tc.notReached && !errors.Is(r.Err, ErrNotConnected)) {
			t.Errorf("%s: NotReached %v, err %v", tc.rule, r.NotReached(), r.Err)
		}
	}
}

package wire

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// TestNotReached: an answer that failed before the server can have read
// the request says nothing of the server (NotReached): no connection at
// all (ErrNotConnected), or not sent at all (ErrNotSent: the client
// refused an invalid field value); an answered request is reached, and so is one
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
		header          http.Header
		notReached, err bool
		mark            error
	}{
		{"a refused connection never reached the server", closed, http.Header{}, true, true, ErrNotConnected},
		{"a request the client refused to send never reached it", ok.URL, http.Header{"X-Bad": {"a\x00b"}}, true, true, ErrNotSent},
		{"a request read and dropped reached it", hang.URL, http.Header{}, false, true, nil},
		{"an answered request reached it", ok.URL, http.Header{}, false, false, nil},
	} {
		x := Exchange{Request: ExchangeRequest{Method: http.MethodPost, URL: tc.url + "/v1/charges", Header: tc.header, Body: []byte(`{}`)}}
		r, _ := HTTP{Client: c}.Do(context.Background(), x)
		if r.NotReached() != tc.notReached || (r.Err != nil) != tc.err || (tc.mark != nil && !errors.Is(r.Err, tc.mark)) {
			t.Errorf("%s: NotReached %v, err %v", tc.rule, r.NotReached(), r.Err)
		}
	}
}

// TestCarrierCapabilities: the capabilities each carrier declares, the
// ones cases ask for.
func TestCarrierCapabilities(t *testing.T) {
	h := NewCarrier(&apispec.Target{BaseURL: "http://127.0.0.1:1"}, NewClient(time.Second))
	g := NewCarrier(&apispec.Target{BaseURL: "grpc://127.0.0.1:1"}, NewClient(time.Second))
	defer h.Close()
	defer g.Close()
	caps := func(c Carrier) []bool {
		_, lb := c.(LastBytes)
		_, wu := c.(Warmer)
		_, m := c.(Methods)
		_, hf := c.(HeaderFields)
		_, p := c.(Problems)
		_, cc := c.(ContentCoding)
		_, rb := c.(RawBodies)
		_, hk := c.(HeaderKeys)
		return []bool{lb, wu, m, hf, p, cc, rb, hk}
	}
	if got := caps(h); !reflect.DeepEqual(got, []bool{true, true, true, true, true, true, true, true}) {
		t.Errorf("HTTP capabilities = %v, want all", got)
	}
	if got := caps(g); !reflect.DeepEqual(got, []bool{false, true, false, false, false, false, false, false}) {
		t.Errorf("gRPC capabilities = %v, want Warmer only", got)
	}
	if h.Name() != "HTTP" || g.Name() != "gRPC" {
		t.Errorf("names %q, %q", h.Name(), g.Name())
	}
}

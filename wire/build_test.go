package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

func buildTarget(path string) (*apispec.Target, *apispec.Operation) {
	t := &apispec.Target{BaseURL: "http://127.0.0.1:1", KeyHeader: "Idempotency-Key", KeySyntax: apispec.SFString,
		Principals: []apispec.Principal{{Name: "a", Headers: map[string]string{"Authorization": "Bearer a"}}},
		Operations: []apispec.Operation{{Name: "c", Method: "POST", Path: path, Body: json.RawMessage(`{"a":1}`),
			Headers: map[string]string{"Api-Version": "2024-01-01"}}}}
	return t, &t.Operations[0]
}

// TestBuildQueryAndHeaders: a mutation's query replaces parameters of the
// same name and keeps the others as written; its headers replace the
// operation's.
func TestBuildQueryAndHeaders(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/v1/charges", "/v1/charges?capture=false"},
		{"/v1/charges?capture=true", "/v1/charges?capture=false"},
		{"/v1/charges?z=1&capture=true&a=%20b", "/v1/charges?z=1&a=%20b&capture=false"},
	} {
		tg, op := buildTarget(tc.path)
		x := Build(tg, op, Request{Key: "k", Query: map[string]string{"capture": "false"}, Headers: map[string]string{"api-version": "2024-06-01"}})
		if x.Request.URL != tg.BaseURL+tc.want {
			t.Errorf("%s: URL %s, want %s", tc.path, x.Request.URL, tg.BaseURL+tc.want)
		}
		if got := x.Request.Header.Values("Api-Version"); len(got) != 1 || got[0] != "2024-06-01" {
			t.Errorf("Api-Version = %q, want the mutation's alone", got)
		}
	}
}

// TestKeyNameOnTheWire: a key field named by Request.KeyName reaches the
// server over HTTP/1.1 spelled exactly so, read here from the bytes of a
// raw listener (net/http's server would canonicalise it).
func TestKeyNameOnTheWire(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lines := make(chan []string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			lines <- nil
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		var head []string
		for {
			l, err := br.ReadString('\n')
			if err != nil || l == "\r\n" {
				break
			}
			head = append(head, strings.TrimRight(l, "\r\n"))
		}
		lines <- head
		_, _ = c.Write([]byte("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"))
	}()
	tg, op := buildTarget("/c")
	tg.BaseURL = "http://" + ln.Addr().String()
	x := Build(tg, op, Request{Key: "k1", KeyName: "idempotency-key"})
	resp, _ := HTTP{Client: NewClient(5 * time.Second)}.Do(context.Background(), x)
	if resp.Err != nil || resp.Status != http.StatusNoContent {
		t.Fatalf("answer %s", resp.String())
	}
	var keyLines []string
	for _, l := range <-lines {
		if strings.EqualFold(strings.SplitN(l, ":", 2)[0], "idempotency-key") {
			keyLines = append(keyLines, l)
		}
	}
	if len(keyLines) != 1 || keyLines[0] != `idempotency-key: "k1"` {
		t.Errorf("key field lines on the wire %q, want exactly [idempotency-key: \"k1\"]", keyLines)
	}
}

// TestHTTP2Only: a target with HTTP2 speaks HTTP/2 only: h2c with prior
// knowledge over plain TCP, h2 by ALPN over TLS, field names in lower
// case (Go's HTTP/2 server refuses an upper-case name on the wire); a
// server without HTTP/2 fails the preflight as unreachable, saying why.
func TestHTTP2Only(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Key", r.Header.Get("Idempotency-Key"))
		w.WriteHeader(http.StatusCreated)
	})
	h2c := httptest.NewUnstartedServer(h)
	h2c.Config.Protocols = new(http.Protocols)
	h2c.Config.Protocols.SetHTTP1(true)
	h2c.Config.Protocols.SetUnencryptedHTTP2(true)
	h2c.Start()
	defer h2c.Close()
	tlsH2 := httptest.NewUnstartedServer(h)
	tlsH2.EnableHTTP2 = true
	tlsH2.StartTLS()
	defer tlsH2.Close()
	tlsH1 := httptest.NewTLSServer(h)
	defer tlsH1.Close()
	h1 := httptest.NewServer(h)
	defer h1.Close()
	for _, tc := range []struct {
		name, url string
		ok        bool
	}{{"h2c", h2c.URL, true}, {"h2 by ALPN", tlsH2.URL, true}, {"TLS without h2", tlsH1.URL, false}, {"HTTP/1.1 only", h1.URL, false}} {
		tg, op := buildTarget("/c")
		tg.BaseURL, tg.HTTP2, tg.Timeout = tc.url, true, 5*time.Second
		if err := tg.SetTLS(apispec.TLS{InsecureSkipVerify: true}); err != nil {
			t.Fatal(err)
		}
		c := Client(tg, 5*time.Second)
		proto, err := Preflight(context.Background(), tg, NewCarrier(tg, c), c)
		if !tc.ok {
			if !errors.Is(err, apispec.ErrUnreachable) || !strings.Contains(err.Error(), "the server must speak HTTP/2") {
				t.Errorf("%s: preflight %q, %v; want unreachable, saying HTTP/2 is needed", tc.name, proto, err)
			}
			c.CloseIdleConnections()
			continue
		}
		resp, _ := HTTP{Client: c}.Do(context.Background(), Build(tg, op, Request{Key: "k1", KeyName: "IDEMPOTENCY-KEY"}))
		if err != nil || proto != "HTTP/2" || resp.Status != http.StatusCreated || resp.Proto != "HTTP/2.0" || resp.Header.Get("X-Key") != `"k1"` {
			t.Errorf("%s: preflight %q %v; answer %s over %s, key seen %q", tc.name, proto, err, resp.String(), resp.Proto, resp.Header.Get("X-Key"))
		}
		c.CloseIdleConnections()
	}
}

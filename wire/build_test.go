package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/target"
)

func buildTarget(path string) (*target.Target, *target.Operation) {
	t := &target.Target{BaseURL: "http://127.0.0.1:1", KeyHeader: "Idempotency-Key", KeySyntax: target.SFString,
		Principals: []target.Principal{{Name: "a", Headers: map[string]string{"Authorization": "Bearer a"}}},
		Operations: []target.Operation{{Name: "c", Method: "POST", Path: path, Body: json.RawMessage(`{"a":1}`),
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

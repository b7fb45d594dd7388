package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/rawspelling"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// startServe runs `serve` in-process with f until the test ends and
// returns the base URL from its listening line.
func startServe(t *testing.T, f serveFlags) string {
	t.Helper()
	if f.addr == "" {
		f.addr = "127.0.0.1:0"
	}
	if f.ttl == 0 {
		f.ttl, f.lease, f.store, f.maxBody = time.Hour, 5*time.Second, "memory", 1<<20
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- runServe(ctx, pw, f)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no listening line: %v (serve: %v)", err, <-errc)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("serve did not shut down")
		}
	})
	base, _ := strings.CutPrefix(strings.TrimSpace(line), "idemcheck: listening on ")
	return base
}

// effects reads the demo's execution count for key.
func effects(t *testing.T, c *http.Client, base, key string) int {
	t.Helper()
	resp, err := c.Get(base + "/v1/effects?key=" + key)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Executions int }
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	return e.Executions
}

// TestServeKeySpelling: serve with exact-key-spelling reads the key
// field's name as sent over HTTP/1.1 and runs a request whose key field is
// spelled otherwise unprotected; the correct build replays it.
func TestServeKeySpelling(t *testing.T) {
	for _, defect := range []bool{false, true} {
		f := serveFlags{}
		if defect {
			f.defects = []string{"exact-key-spelling"}
		}
		base := startServe(t, f)
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		key := "spelling-" + time.Now().Format("150405.000000")
		for _, name := range []string{"idempotency-key", "IDEMPOTENCY-KEY"} {
			req, _ := http.NewRequest("POST", base+"/v1/charges", strings.NewReader(`{"amount":100,"currency":"usd"}`))
			req.Header.Set("Authorization", "Bearer alice")
			rawspelling.SetVerbatim(req.Header, name, key)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 201 {
				t.Fatalf("defect=%v %s: %d", defect, name, resp.StatusCode)
			}
		}
		want := 1
		if defect {
			want = 2
		}
		if n := effects(t, c, base, key); n != want {
			t.Errorf("defect=%v: the key under two spellings executed %d times, want %d", defect, n, want)
		}
	}
}

// TestServeHTTP2: serve --h2c answers HTTP/2 with prior knowledge beside
// HTTP/1.1 on one port, serve --tls-cert negotiates h2 by ALPN (and
// http/1.1 for a client that offers only that), and the idempotency
// middleware answers the same over each: a replay, 409 in flight, 422 on
// another body.
func TestServeHTTP2(t *testing.T) {
	pki := demotest.NewPKI(t)
	cert, key := pki.ServerFiles(t)
	transport := func(h1, h2, h2c bool) *http.Transport {
		tr := &http.Transport{TLSClientConfig: pki.ClientTLS(), Protocols: new(http.Protocols)}
		tr.Protocols.SetHTTP1(h1)
		tr.Protocols.SetHTTP2(h2)
		tr.Protocols.SetUnencryptedHTTP2(h2c)
		return tr
	}
	h2cBase := startServe(t, serveFlags{h2c: true})
	tlsBase := strings.Replace(startServe(t, serveFlags{tlsCert: cert, tlsKey: key}), "127.0.0.1", "localhost", 1)
	if !strings.HasPrefix(tlsBase, "https://") {
		t.Fatalf("TLS listening URL %q", tlsBase)
	}
	rows := []struct {
		name, base, proto string
		tr                *http.Transport
	}{
		{"h2c", h2cBase, "HTTP/2.0", transport(false, false, true)},
		{"http1-beside-h2c", h2cBase, "HTTP/1.1", transport(true, false, false)},
		{"h2-alpn", tlsBase, "HTTP/2.0", transport(false, true, false)},
		{"http1-over-tls", tlsBase, "HTTP/1.1", transport(true, false, false)},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			defer row.tr.CloseIdleConnections()
			c := &http.Client{Transport: row.tr, Timeout: 20 * time.Second}
			// post is safe to call from another goroutine: it reports, never fails the test.
			post := func(key, body string) (status int, replayed bool, b string, err error) {
				req, _ := http.NewRequest("POST", row.base+"/v1/charges", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer alice")
				req.Header.Set("Idempotency-Key", key)
				resp, err := c.Do(req)
				if err != nil {
					return 0, false, "", err
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				// h2 needs ALPN; HTTP/1.1 is what a TLS connection without it carries.
				if resp.Proto != row.proto || (resp.TLS != nil && (resp.TLS.NegotiatedProtocol == "h2") != (row.proto == "HTTP/2.0")) {
					return 0, false, "", fmt.Errorf("answered over %s, want %s", resp.Proto, row.proto)
				}
				return resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true", string(raw), nil
			}
			k := row.name + "-" + time.Now().Format("150405.000000")
			const slow = `{"amount":100,"currency":"usd","delay_ms":1500}`
			type reply struct {
				status int
				body   string
				err    error
			}
			done := make(chan reply, 1)
			go func() { s, _, b, err := post(k, slow); done <- reply{s, b, err} }()
			deadline := time.Now().Add(10 * time.Second)
			for effects(t, c, row.base, k) == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if s, _, _, err := post(k, slow); err != nil || s != http.StatusConflict {
				t.Errorf("retry in flight: %d %v, want 409", s, err)
			}
			first := <-done
			if first.err != nil || first.status != 201 {
				t.Fatalf("original: %d %v", first.status, first.err)
			}
			if s, replayed, b, err := post(k, slow); err != nil || s != 201 || !replayed || b != first.body {
				t.Errorf("retry after completion: %d replayed=%v same body=%v %v", s, replayed, b == first.body, err)
			}
			if s, _, _, err := post(k, `{"amount":101,"currency":"usd","delay_ms":1500}`); err != nil || s != http.StatusUnprocessableEntity {
				t.Errorf("another body: %d %v, want 422", s, err)
			}
			if n := effects(t, c, row.base, k); n != 1 {
				t.Errorf("%d executions, want 1", n)
			}
		})
	}
}

// TestServeHelpListsDefects: serve --help names every defect of the
// catalog, the issue 26 ones among them, and the protocol flags.
func TestServeHelpListsDefects(t *testing.T) {
	cmd, _, err := rootCmd.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.SetOut(&out)
	defer cmd.SetOut(nil)
	if err := cmd.Help(); err != nil {
		t.Fatal(err)
	}
	for _, want := range append(demo.DefectNames(), "no-query-fingerprint", "exact-key-spelling", "replay-coded-body", "--h2c", "--tls-cert", "--fingerprint-header") {
		if !strings.Contains(out.String(), want) {
			t.Errorf("serve --help does not mention %s", want)
		}
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/rawspelling"
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

package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// endingMCP is an MCP server that ends a session after its first
// tools/call, as the specification lets it ("The server MAY terminate
// the session at any time, after which it MUST respond to requests
// containing that session ID with HTTP 404"), and counts what it saw.
type endingMCP struct {
	mu                       sync.Mutex
	sessions                 map[string]bool
	inits, calls, notFounds  int
	sessionsSeenByInitialize []string // the Mcp-Session-Id an initialize carried
}

func (m *endingMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sid := r.Header.Get("Mcp-Session-Id")
	if req.Method == "initialize" {
		m.inits++
		m.sessionsSeenByInitialize = append(m.sessionsSeenByInitialize, sid)
		id := fmt.Sprintf("s%d", m.inits)
		m.sessions[id] = true
		w.Header().Set("Mcp-Session-Id", id)
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}`, req.ID)
		return
	}
	if !m.sessions[sid] {
		m.notFounds++
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	if req.Method == "notifications/initialized" {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	m.calls++
	delete(m.sessions, sid) // ended after one call
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"structuredContent":{"call":%d}}}`, req.ID, m.calls)
}

// TestMCPSessionRenewed: a call the server answers 404 for its ended
// session starts a new session (initialize without the old id) and goes
// once more in it, as the MCP specification requires of a client; the
// handshake's requests never fire the call's WithSent hook.
func TestMCPSessionRenewed(t *testing.T) {
	m := &endingMCP{sessions: map[string]bool{}}
	srv := httptest.NewServer(m)
	defer srv.Close()
	tg := bodyTarget(t, `
base_url: `+srv.URL+`
principals: [{name: a, headers: {Authorization: Bearer a}}]
carrier: mcp
key: {pointer: /idempotency_key}
operations: [{name: o, tool: make, body: {n: 1}}]`)
	c := NewAnswering(tg, Client(tg, 5*time.Second))
	defer c.Close()
	for i, want := range []string{`{"call":1}`, `{"call":2}`} {
		sent := 0
		ctx := WithSent(context.Background(), func() { sent++ })
		resp, x := c.Do(ctx, c.Build(&tg.Operations[0], Request{Key: fmt.Sprintf("key-%d", i)}))
		if resp.Err != nil || resp.Status != http.StatusOK || string(resp.Body) != want {
			t.Fatalf("call %d: %v %d %s (exchange %s)", i, resp.Err, resp.Status, resp.Body, x.Error)
		}
		// The first call's handshake is not timed; the second's refused
		// write is (the hook fires at the first write: see Do).
		if wantSent := i + 1; sent != wantSent {
			t.Errorf("call %d: WithSent hook called %d times, want %d", i, sent, wantSent)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inits != 2 || m.calls != 2 || m.notFounds != 1 {
		t.Errorf("server saw %d initialize, %d calls, %d 404s; want 2, 2, 1", m.inits, m.calls, m.notFounds)
	}
	for _, sid := range m.sessionsSeenByInitialize {
		if sid != "" {
			t.Errorf("an initialize carried Mcp-Session-Id %q", sid)
		}
	}
}

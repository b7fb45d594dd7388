package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/idemcheck/idemcheck/apispec"
)

// Answering is the carrier of graphql, jsonrpc and mcp targets: requests
// go over HTTP as Build made them, and each answer is read (ReadAnswer)
// into the status it stands for and the result a replay repeats. The
// exchange keeps the answer as it came (its HTTP 200 and whole body).
// An MCP target's calls go in a session: the initialize handshake once
// per principal, its Mcp-Session-Id and protocol version on every call.
type Answering struct {
	HTTP    HTTP
	Target  *apispec.Target
	Profile *apispec.Profile

	mu       sync.Mutex
	sessions map[string]*mcpSession // by the principal's header fields
}

// NewAnswering is the carrier of t (a graphql, jsonrpc or mcp target)
// judged under p, sending over c.
func NewAnswering(t *apispec.Target, p *apispec.Profile, c *http.Client) *Answering {
	return &Answering{HTTP: HTTP{Client: c}, Target: t, Profile: p}
}

// Do implements Carrier.
func (a *Answering) Do(ctx context.Context, x Exchange) (Resp, Exchange) {
	if a.Target.IsMCP() {
		s, err := a.session(ctx, x)
		if err != nil {
			return Resp{Err: err}, withError(x, err)
		}
		x.Request.Header = x.Request.Header.Clone()
		s.stamp(x.Request.Header)
	}
	resp, x := a.HTTP.Do(ctx, x)
	if resp.Err != nil {
		return resp, x
	}
	ans := ReadAnswer(a.Target, a.Profile, resp.Status, resp.Header, resp.Body)
	resp.Status, resp.Body = ans.Status, ans.Body
	return resp, x
}

func withError(x Exchange, err error) Exchange {
	x.Error = err.Error()
	return x
}

// mcpSession is one initialised MCP session.
type mcpSession struct {
	once    sync.Once
	err     error
	id      string // Mcp-Session-Id, "" when the server keeps none
	version string // the protocol version the server chose
}

// stamp sets the session's fields on h.
func (s *mcpSession) stamp(h http.Header) {
	if s.id != "" {
		h.Set("Mcp-Session-Id", s.id)
	}
	if s.version != "" {
		h.Set("Mcp-Protocol-Version", s.version)
	}
}

// mcpProtocolVersion is the version idemcheck asks for; the server's
// answer is the session's.
const mcpProtocolVersion = "2025-06-18"

// session is the MCP session of x's principal (its header fields but
// the request's own), made by the handshake the first time: initialize,
// then notifications/initialized.
func (a *Answering) session(ctx context.Context, x Exchange) (*mcpSession, error) {
	id := principalID(x.Request.Header)
	a.mu.Lock()
	if a.sessions == nil {
		a.sessions = map[string]*mcpSession{}
	}
	s, ok := a.sessions[id]
	if !ok {
		s = &mcpSession{}
		a.sessions[id] = s
	}
	a.mu.Unlock()
	s.once.Do(func() { s.err = a.handshake(ctx, x, s) })
	return s, s.err
}

// principalID names the credentials in h: every field but those a
// request of its own sets.
func principalID(h http.Header) string {
	var parts []string
	for k, v := range h {
		switch k {
		case "Content-Type", "Accept", "Content-Length", "Mcp-Session-Id", "Mcp-Protocol-Version":
			continue
		}
		parts = append(parts, k+"="+strings.Join(v, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}

// handshake initialises s with the server x is for, as x's principal.
func (a *Answering) handshake(ctx context.Context, x Exchange, s *mcpSession) error {
	h := x.Request.Header.Clone()
	init := Exchange{Label: "mcp initialize", Request: ExchangeRequest{Method: http.MethodPost, URL: x.Request.URL, Header: h,
		Body: marshal(rpcEnvelope{JSONRPC: "2.0", ID: nextRPCID(), Method: "initialize", Params: marshal(map[string]any{
			"protocolVersion": mcpProtocolVersion, "capabilities": map[string]any{},
			"clientInfo": map[string]string{"name": "idemcheck", "version": "1"}})})}}
	resp, _ := a.HTTP.Do(ctx, init)
	if resp.Err != nil {
		return fmt.Errorf("%w: mcp initialize: %w", ErrNotConnected, resp.Err)
	}
	msg, ok := rpcMessage(resp.Header, resp.Body)
	var r struct {
		Result *struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if !ok || resp.Status != http.StatusOK || json.Unmarshal(msg, &r) != nil || r.Result == nil {
		return fmt.Errorf("%w: mcp initialize at %s answered %d %s", ErrNotConnected, x.Request.URL, resp.Status, clip(resp.Body))
	}
	s.id, s.version = resp.Header.Get("Mcp-Session-Id"), r.Result.ProtocolVersion
	note := Exchange{Label: "mcp initialized", Request: ExchangeRequest{Method: http.MethodPost, URL: x.Request.URL, Header: h.Clone(),
		Body: []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)}}
	s.stamp(note.Request.Header)
	if resp, _ := a.HTTP.Do(ctx, note); resp.Err != nil || resp.Status >= 300 {
		return fmt.Errorf("%w: mcp notifications/initialized at %s answered %d %s", ErrNotConnected, x.Request.URL, resp.Status, clip(resp.Body))
	}
	return nil
}

// clip is the start of b for an error line.
func clip(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}

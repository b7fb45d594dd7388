package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// Answering is the carrier of graphql, jsonrpc and mcp targets: requests
// go over HTTP as Build made them, and each answer is read (ReadAnswer)
// into the status it stands for and the result a replay repeats. The
// exchange keeps the answer as it came (its HTTP 200 and whole body).
// An MCP target's calls go in a session: the initialize handshake once
// per server and principal, its Mcp-Session-Id and protocol version on
// every call, and a new session when the server answers a call 404 for
// its session id (it ended the session: a restart, a lifetime of its
// own), the call then sent again in it.
//
// Its capabilities: LastBytes and Warmer (its requests are HTTP
// requests). Not Methods (every call is a POST), HeaderFields and
// Problems (an answer is a JSON document under 200), ContentCoding, nor
// RawBodies (the payload travels re-encoded inside an envelope), nor
// HeaderKeys (no header carries the key).
type Answering struct {
	http     HTTP
	sessions *mcpSessions // shared by the carriers Warm makes
}

// mcpSessions are an MCP carrier's sessions by server and principal.
type mcpSessions struct {
	mu sync.Mutex
	by map[string]*mcpSession
}

// NewAnswering is the carrier of t (a graphql, jsonrpc or mcp target),
// sending over c.
func NewAnswering(t *apispec.Target, c *http.Client) *Answering {
	return &Answering{http: HTTP{Target: t, Client: c}, sessions: &mcpSessions{by: map[string]*mcpSession{}}}
}

// Name implements Carrier.
func (a *Answering) Name() string {
	switch a.http.Target.CarrierKind() {
	case apispec.CarrierGraphQL:
		return "GraphQL"
	case apispec.CarrierMCP:
		return "MCP"
	}
	return "JSON-RPC"
}

// Build implements Carrier (Build: the key in the payload or document).
func (a *Answering) Build(op *apispec.Operation, r Request) Exchange {
	return Build(a.http.Target, op, r)
}

// Do implements Carrier.
func (a *Answering) Do(ctx context.Context, x Exchange) (Resp, Exchange) {
	original := x
	x, err := a.inSession(ctx, x)
	var refused *refusal
	switch {
	case errors.As(err, &refused):
		// The server answered the handshake, refusing it (401 without
		// credentials): that is its answer to this request.
		return refused.resp, refused.x
	case err != nil:
		return Resp{Err: err, Start: time.Now(), End: time.Now()}, withError(x, err)
	}
	resp, out := a.http.Do(ctx, x)
	if stale := x.Request.Header.Get("Mcp-Session-Id"); stale != "" && resp.Err == nil && resp.Status == http.StatusNotFound {
		// "When a client receives HTTP 404 in response to a request
		// containing an Mcp-Session-Id, it MUST start a new session"
		// (MCP, streamable HTTP): the server refused the call unread, so
		// it goes once more, in the new session (ctx's WithSent hook
		// fired at the refused write already). A burst's calls
		// (SendLastBytes) are not sent again: their overlap is gone.
		if again, err := a.renewed(ctx, original, stale); err == nil {
			resp, out = a.http.Do(ctx, again)
		}
	}
	return a.read(resp), out
}

// read is resp as the status its answer stands for.
func (a *Answering) read(resp Resp) Resp {
	if resp.Err != nil {
		return resp
	}
	ans := ReadAnswer(a.http.Target, resp.Status, resp.Header, resp.Body)
	resp.Status, resp.Body = ans.Status, ans.Body
	return resp
}

// inSession is x with its MCP session's fields (made first when
// needed); x itself for GraphQL and JSON-RPC.
func (a *Answering) inSession(ctx context.Context, x Exchange) (Exchange, error) {
	if !a.http.Target.IsMCP() {
		return x, nil
	}
	s, err := a.session(ctx, x)
	if err != nil {
		return x, err
	}
	x.Request.Header = x.Request.Header.Clone()
	s.mu.Lock() // a renewal may be changing its fields
	s.stamp(x.Request.Header)
	s.mu.Unlock()
	return x, nil
}

// renewed is x (as built, before its session's fields) in a new session
// of its principal, made in place of the one whose id stale the server
// no longer knows; a call that found it renewed already uses the new one.
func (a *Answering) renewed(ctx context.Context, x Exchange, stale string) (Exchange, error) {
	s, err := a.session(ctx, x)
	if err != nil {
		return x, err
	}
	s.mu.Lock()
	if s.id == stale {
		s.ready = false
		if err := a.handshake(ctx, x, s); err != nil {
			s.mu.Unlock()
			return x, err
		}
		s.ready = true
	}
	s.mu.Unlock()
	return a.inSession(ctx, x)
}

// Reach implements Carrier: an HTTP answer at base, and for MCP a
// session made there.
func (a *Answering) Reach(ctx context.Context, base string) (string, error) {
	proto, err := a.http.Reach(ctx, base)
	if err != nil || !a.http.Target.IsMCP() || len(a.http.Target.Operations) == 0 {
		return proto, err
	}
	op := &a.http.Target.Operations[0]
	x := a.Build(op, Request{Base: base, NoKey: true})
	if _, err := a.session(ctx, x); err != nil {
		return "", err
	}
	return proto, nil
}

// Close implements Carrier.
func (a *Answering) Close() { a.http.Close() }

// Warm implements Warmer: HTTP's warmed connections, the same sessions.
func (a *Answering) Warm(ctx context.Context, n int, bases ...string) Carrier {
	return &Answering{http: a.http.Warm(ctx, n, bases...).(HTTP), sessions: a.sessions}
}

// SendLastBytes implements LastBytes: HTTP's, each answer read.
func (a *Answering) SendLastBytes(ctx context.Context, xs []Exchange, bases []string, timeout time.Duration, around func(i int) (done func())) ([]Resp, []Exchange, string, bool, string) {
	in := make([]Exchange, len(xs))
	for i, x := range xs {
		var err error
		if in[i], err = a.inSession(ctx, x); err != nil {
			return nil, nil, "", false, err.Error()
		}
	}
	rs, out, how, ok, why := a.http.SendLastBytes(ctx, in, bases, timeout, around)
	for i := range rs {
		rs[i] = a.read(rs[i])
	}
	return rs, out, how, ok, why
}

func withError(x Exchange, err error) Exchange {
	x.Error = err.Error()
	return x
}

// mcpSession is one initialised MCP session.
type mcpSession struct {
	mu      sync.Mutex // held through the handshake
	ready   bool
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
// the request's own) at x's server, made by the handshake the first time: initialize,
// then notifications/initialized.
func (a *Answering) session(ctx context.Context, x Exchange) (*mcpSession, error) {
	id := serverOf(x.Request.URL) + "\n" + principalID(x.Request.Header)
	a.sessions.mu.Lock()
	s, ok := a.sessions.by[id]
	if !ok {
		s = &mcpSession{}
		a.sessions.by[id] = s
	}
	a.sessions.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready {
		return s, nil
	}
	// A failed handshake is tried again by the next call: one refused
	// connection on a loaded machine must not end every later case.
	if err := a.handshake(ctx, x, s); err != nil {
		return nil, err
	}
	s.ready = true
	return s, nil
}

// serverOf is the scheme and authority of URL u: a replica keeps
// sessions of its own.
func serverOf(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Scheme + "://" + p.Host
	}
	return u
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

// refusal is an initialize the server answered with an HTTP error: the
// request that needed the session gets that answer.
type refusal struct {
	resp Resp
	x    Exchange
}

func (r *refusal) Error() string {
	return fmt.Sprintf("mcp initialize refused: %d %s", r.resp.Status, clip(r.resp.Body))
}

// handshake initialises s with the server x is for, as x's principal.
func (a *Answering) handshake(ctx context.Context, x Exchange, s *mcpSession) error {
	ctx = withoutSent(ctx) // the call that needed the session is what is timed
	h := x.Request.Header.Clone()
	init := Exchange{Label: "mcp initialize", Request: ExchangeRequest{Method: http.MethodPost, URL: x.Request.URL, Header: h,
		Body: marshal(rpcEnvelope{JSONRPC: "2.0", ID: nextRPCID(), Method: "initialize", Params: marshal(map[string]any{
			"protocolVersion": mcpProtocolVersion, "capabilities": map[string]any{},
			"clientInfo": map[string]string{"name": "idemcheck", "version": "1"}})})}}
	resp, ix := a.http.Do(ctx, init)
	if resp.Err != nil {
		return fmt.Errorf("%w: mcp initialize: %w", ErrNotConnected, resp.Err)
	}
	if resp.Status >= 400 {
		return &refusal{resp: resp, x: ix}
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
	if resp, _ := a.http.Do(ctx, note); resp.Err != nil || resp.Status >= 300 {
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

var (
	_ Carrier   = (*Answering)(nil)
	_ LastBytes = (*Answering)(nil)
	_ Warmer    = (*Answering)(nil)
)

// DeclaredTTL reads the replay TTL an MCP server declares in a tool's
// result (answers.ttl_tool, ttl_pointer: AdCP's get_adcp_capabilities)
// into t.TTL, when the config gives none. It does nothing for any other
// target. The error is one line: the call failed or declared nothing.
func DeclaredTTL(ctx context.Context, t *apispec.Target) error {
	a := t.Answers
	if !t.IsMCP() || a == nil || a.TTLTool == "" || t.TTL != 0 || t.NeverExpires || len(t.Operations) == 0 {
		return nil
	}
	c := NewAnswering(t, Client(t, t.Timeout))
	defer c.Close()
	op := apispec.Operation{Name: a.TTLTool, Method: http.MethodPost, Path: t.Operations[0].Path, Tool: a.TTLTool, Body: json.RawMessage(`{}`)}
	resp, _ := c.Do(ctx, c.Build(&op, Request{Label: "declared ttl", NoKey: true}))
	if resp.Err != nil || !resp.OK() {
		return fmt.Errorf("answers.ttl_tool %s: %s (declare ttl: to skip the call)", a.TTLTool, resp.String())
	}
	secs, err := strconv.ParseFloat(jsonx.PointerText(resp.Body, a.TTLPointer), 64)
	if err != nil || secs <= 0 {
		return fmt.Errorf("answers.ttl_tool %s: no positive number of seconds at %s in %s (declare ttl:)", a.TTLTool, a.TTLPointer, clip(resp.Body))
	}
	t.TTL = time.Duration(secs * float64(time.Second))
	return nil
}

// Call sends one JSON-RPC call to url with header h, in an MCP session
// when the target is MCP (tools/list for init), and returns its result.
func (a *Answering) Call(ctx context.Context, url string, h http.Header, method string, params any) (json.RawMessage, error) {
	x := Exchange{Label: method, Request: ExchangeRequest{Method: http.MethodPost, URL: url, Header: h.Clone(),
		Body: marshal(rpcEnvelope{JSONRPC: "2.0", ID: nextRPCID(), Method: method, Params: marshal(params)})}}
	x.Request.Header.Set("Content-Type", "application/json")
	x.Request.Header.Set("Accept", "application/json, text/event-stream")
	x, err := a.inSession(ctx, x)
	var refused *refusal
	if errors.As(err, &refused) {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", apispec.ErrUnreachable, err)
	}
	resp, _ := a.http.Do(ctx, x)
	if resp.Err != nil {
		return nil, fmt.Errorf("%w: %s %s: %v", apispec.ErrUnreachable, method, url, resp.Err)
	}
	msg, ok := rpcMessage(resp.Header, resp.Body)
	var r rpcAnswer
	if !ok || json.Unmarshal(msg, &r) != nil || resp.Status != http.StatusOK {
		return nil, fmt.Errorf("%s %s: answered %d %s", method, url, resp.Status, clip(resp.Body))
	}
	if r.Error != nil {
		return nil, fmt.Errorf("%s %s: error %s %s", method, url, r.Error.Code, r.Error.Message)
	}
	return r.Result, nil
}

package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// keyPattern is AdCP's idempotency_key pattern.
var keyPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{16,255}$`)

// The codes of the agent's tool errors.
const (
	codeConflict    = "IDEMPOTENCY_CONFLICT"
	codeInFlight    = "IDEMPOTENCY_IN_FLIGHT"
	codeBudget      = "BUDGET_TOO_LOW"
	codeUnavailable = "SERVICE_UNAVAILABLE"
)

// JSON-RPC 2.0 error codes.
const (
	rpcParse          = -32700
	rpcInvalidRequest = -32600
	rpcNoMethod       = -32601
	rpcInvalidParams  = -32602
)

type server struct {
	ttl    time.Duration
	defect defect
	users  map[string]string

	mu       sync.Mutex
	sessions map[string]string  // Mcp-Session-Id -> customer
	records  map[string]*record // customer \x00 tool \x00 key
	effects  map[string]int     // key -> media buys executed under it
	ids      atomic.Int64
}

type record struct {
	digest  string
	result  map[string]any // nil while in flight
	isError bool
	expires time.Time
}

func newServer(ttl time.Duration, d defect) *server {
	return &server{ttl: ttl, defect: d, users: map[string]string{"Bearer alice": "alice", "Bearer bob": "bob"},
		sessions: map[string]string{}, records: map[string]*record{}, effects: map[string]int{}}
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", s.mcp)
	mux.HandleFunc("POST /rpc", s.rpc)
	mux.HandleFunc("GET /effects", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		n := 0
		for k, c := range s.effects { // under ?key=, or every key when it names none
			if key, ok := r.URL.Query()["key"]; !ok || key[0] == k {
				n += c
			}
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"executions":%d}`, n)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("adcpagent\n")) })
	return mux
}

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

// reply writes a JSON-RPC response, as one SSE event when the client
// accepts a stream (as MCP SDK servers answer), else as JSON.
func reply(w http.ResponseWriter, r *http.Request, id json.RawMessage, result any, rerr *rpcError) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		msg["error"] = rerr
	} else {
		msg["result"] = result
	}
	b, _ := json.Marshal(msg)
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// request is the caller and the JSON-RPC request of r; ok is false when
// w was answered instead (no credentials, not a JSON-RPC 2.0 request).
func (s *server) request(w http.ResponseWriter, r *http.Request) (customer string, req rpcRequest, ok bool) {
	customer, ok = s.users[r.Header.Get("Authorization")]
	if !ok {
		http.Error(w, `{"error":"invalid token"}`, http.StatusUnauthorized)
		return "", req, false
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		reply(w, r, json.RawMessage("null"), nil, &rpcError{Code: rpcParse, Message: "parse error: " + err.Error()})
		return "", req, false
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		reply(w, r, req.ID, nil, &rpcError{Code: rpcInvalidRequest, Message: "not a JSON-RPC 2.0 request"})
		return "", req, false
	}
	return customer, req, true
}

func (s *server) mcp(w http.ResponseWriter, r *http.Request) {
	customer, req, ok := s.request(w, r)
	if !ok {
		return
	}
	if req.Method == "initialize" {
		id := newID()
		s.mu.Lock()
		s.sessions[id] = customer
		s.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", id)
		reply(w, r, req.ID, map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]string{"name": "adcpagent", "version": "1"}}, nil)
		return
	}
	s.mu.Lock()
	owner, known := s.sessions[r.Header.Get("Mcp-Session-Id")]
	s.mu.Unlock()
	switch {
	case !known:
		http.Error(w, `{"error":"unknown or missing Mcp-Session-Id"}`, http.StatusNotFound)
		return
	case owner != customer:
		http.Error(w, `{"error":"the session belongs to another caller"}`, http.StatusForbidden)
		return
	case len(req.ID) == 0: // a notification: notifications/initialized
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch req.Method {
	case "tools/list":
		reply(w, r, req.ID, map[string]any{"tools": tools}, nil)
	case "tools/call":
		s.call(w, r, customer, req)
	default:
		reply(w, r, req.ID, nil, &rpcError{Code: rpcNoMethod, Message: "no method " + req.Method})
	}
}

// tools is what tools/list answers.
var tools = []map[string]any{
	{"name": "get_adcp_capabilities", "description": "What this seller supports.", "inputSchema": map[string]any{"type": "object"}},
	{"name": "create_media_buy", "description": "Book a media buy. The key is the idempotency_key argument, or _meta[\"" + metaKey + "\"] for a client whose SDK sends request metadata (one of the two, or both alike).", "inputSchema": map[string]any{
		"type": "object", "required": []string{"buyer_ref", "budget"},
		"properties": map[string]any{
			"idempotency_key": map[string]any{"type": "string", "pattern": keyPattern.String()},
			"buyer_ref":       map[string]any{"type": "string"},
			"budget":          map[string]any{"type": "number"},
			"delay_ms":        map[string]any{"type": "integer"},
			"fail":            map[string]any{"type": "string"},
		}}},
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func toolResult(structured map[string]any, isError bool) map[string]any {
	text, _ := json.Marshal(structured)
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}}, "structuredContent": structured, "isError": isError}
}

// toolErrors is an error result carrying code and message only.
func toolErrors(code, msg string) map[string]any {
	return map[string]any{"errors": []any{map[string]any{"code": code, "message": msg}}}
}

func (s *server) call(w http.ResponseWriter, r *http.Request, customer string, req rpcRequest) {
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
		Meta      map[string]any `json:"_meta"`
	}
	d := json.NewDecoder(bytes.NewReader(req.Params))
	d.UseNumber()
	if err := d.Decode(&p); err != nil {
		reply(w, r, req.ID, nil, &rpcError{Code: rpcInvalidParams, Message: "params: " + err.Error()})
		return
	}
	switch p.Name {
	case "get_adcp_capabilities":
		reply(w, r, req.ID, toolResult(s.capabilities(), false), nil)
		return
	case "create_media_buy":
	default:
		reply(w, r, req.ID, nil, &rpcError{Code: rpcInvalidParams, Message: "no tool " + p.Name})
		return
	}
	key, rerr := keyOf(p.Arguments, p.Meta)
	if rerr != nil {
		reply(w, r, req.ID, nil, rerr)
		return
	}
	res, isError := s.book(customer, key, p.Arguments)
	reply(w, r, req.ID, toolResult(res, isError), nil)
}

func (s *server) capabilities() map[string]any {
	return map[string]any{"adcp": map[string]any{"idempotency": map[string]any{
		"supported": true, "replay_ttl_seconds": int(math.Ceil(s.ttl.Seconds()))}}}
}

// metaKey is the _meta field that may carry the key instead of the
// idempotency_key argument: request metadata, as MCP reserves _meta for
// (gsd-workflow's write tools take io.opengsd/idempotency-key so).
const metaKey = "io.adcpagent/idempotency-key"

// keyOf is a create_media_buy call's key, from its arguments or its
// _meta, and its arguments checked: schema validation first, so a
// malformed request never reaches the idempotency store (AdCP closes the
// timing side channel so).
func keyOf(args, meta map[string]any) (string, *rpcError) {
	key, inArgs := args["idempotency_key"].(string)
	if m, inMeta := meta[metaKey].(string); inMeta {
		if inArgs && m != key {
			return "", &rpcError{Code: rpcInvalidParams, Message: "idempotency_key and _meta." + metaKey + " differ", Data: map[string]any{"field": "idempotency_key"}}
		}
		key = m
	}
	_, budgetOK := args["budget"].(json.Number)
	ref, _ := args["buyer_ref"].(string)
	switch {
	case !keyPattern.MatchString(key):
		return "", &rpcError{Code: rpcInvalidParams, Message: "idempotency_key: required, matching " + keyPattern.String(), Data: map[string]any{"field": "idempotency_key"}}
	case !budgetOK || ref == "":
		return "", &rpcError{Code: rpcInvalidParams, Message: "budget (a number) and buyer_ref are required", Data: map[string]any{"field": "budget"}}
	}
	return key, nil
}

// digestOf is the payload's canonical JSON without the key (json.Marshal
// writes members sorted).
func digestOf(args map[string]any) string {
	rest := map[string]any{}
	for k, v := range args {
		if k != "idempotency_key" {
			rest[k] = v
		}
	}
	b, _ := json.Marshal(rest)
	return string(b)
}

// book runs create_media_buy under key for customer, once per key: the
// structured result and whether it is an error (a tool error of the
// agent's idempotency layer or of the buy).
func (s *server) book(customer, key string, args map[string]any) (map[string]any, bool) {
	rid := customer + "\x00create_media_buy\x00" + key
	digest := digestOf(args)
	s.mu.Lock()
	rec, found := s.records[rid]
	if found && rec.result != nil && time.Now().After(rec.expires) {
		delete(s.records, rid)
		found = false
	}
	if found && s.defect != ignoresKey {
		switch {
		case rec.digest != digest && s.defect != noFingerprint:
			stored := rec.result
			s.mu.Unlock()
			conflict := map[string]any{"code": codeConflict, "message": "idempotency_key was used with another payload"}
			if s.defect == leaksPayload && stored != nil {
				conflict["original"] = stored
			}
			if s.defect == executesOnMismatch {
				s.execute(key, args)
			}
			return map[string]any{"errors": []any{conflict}}, true
		case rec.result == nil:
			s.mu.Unlock()
			return toolErrors(codeInFlight, "a request with this idempotency_key is in progress"), true
		}
		replay := maps.Clone(rec.result)
		isError := rec.isError
		s.mu.Unlock()
		if !isError {
			replay["replayed"] = true
		}
		return replay, isError
	}
	rec = &record{digest: digest}
	s.records[rid] = rec
	s.mu.Unlock()

	result, isError, keep := s.execute(key, args)
	s.mu.Lock()
	if keep {
		rec.result, rec.isError, rec.expires = result, isError, time.Now().Add(s.ttl)
	} else if s.records[rid] == rec {
		delete(s.records, rid)
	}
	s.mu.Unlock()
	return result, isError
}

// execute books the media buy (an execution). keep is false for a
// failure of the agent's own: not an outcome to replay.
func (s *server) execute(key string, args map[string]any) (result map[string]any, isError, keep bool) {
	if ms, ok := args["delay_ms"].(json.Number); ok {
		if d, err := ms.Int64(); err == nil && d > 0 {
			time.Sleep(min(time.Duration(d)*time.Millisecond, 10*time.Second))
		}
	}
	s.mu.Lock()
	s.effects[key]++
	s.mu.Unlock()
	switch args["fail"] {
	case "transient":
		return toolErrors(codeUnavailable, "the ad server is unavailable"), true, false
	case "budget":
		return toolErrors(codeBudget, "budget below the product's floor"), true, true
	}
	return map[string]any{"media_buy_id": fmt.Sprintf("mb_%d", s.ids.Add(1)), "buyer_ref": args["buyer_ref"], "budget": args["budget"], "status": "pending_activation"}, false, true
}

package main

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// POST /rpc is the agent as plain JSON-RPC 2.0 over HTTP, for callers
// without an MCP client: no handshake and no session, one call per POST,
// the method a tool's name and the params its arguments
// ({"jsonrpc":"2.0","id":1,"method":"create_media_buy","params":
// {"idempotency_key":"…","buyer_ref":"…","budget":1000}}). The same
// idempotency layer answers: a result is the tool's structured result
// (replayed: true on a replay); a tool error is a JSON-RPC error with a
// code of the server range, its message and the error entry's other
// members as data; invalid params are -32602, before any lookup.

// rpcCodes are the JSON-RPC error codes of the tool errors.
var rpcCodes = map[string]int{
	codeConflict:    -32001,
	codeInFlight:    -32002,
	codeBudget:      -32003,
	codeUnavailable: -32004,
}

func (s *server) rpc(w http.ResponseWriter, r *http.Request) {
	customer, req, ok := s.request(w, r)
	if !ok {
		return
	}
	if len(req.ID) == 0 { // a notification: nothing to answer, nothing done
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var args map[string]any
	d := json.NewDecoder(bytes.NewReader(req.Params))
	d.UseNumber()
	if len(req.Params) > 0 {
		if err := d.Decode(&args); err != nil {
			reply(w, r, req.ID, nil, &rpcError{Code: rpcInvalidParams, Message: "params: want the tool's arguments as an object: " + err.Error()})
			return
		}
	}
	switch req.Method {
	case "get_adcp_capabilities":
		reply(w, r, req.ID, s.capabilities(), nil)
	case "create_media_buy":
		key, rerr := keyOf(args, nil)
		if rerr != nil {
			reply(w, r, req.ID, nil, rerr)
			return
		}
		res, isError := s.book(customer, key, args)
		if isError {
			reply(w, r, req.ID, nil, rpcErrorOf(res))
			return
		}
		reply(w, r, req.ID, res, nil)
	default:
		reply(w, r, req.ID, nil, &rpcError{Code: rpcNoMethod, Message: "no method " + req.Method})
	}
}

// rpcErrorOf is a tool error result as a JSON-RPC error: its first error
// entry's code as rpcCodes', its message, the entry's other members as
// data.
func rpcErrorOf(res map[string]any) *rpcError {
	errs, _ := res["errors"].([]any)
	e, _ := errs[0].(map[string]any)
	code, _ := e["code"].(string)
	msg, _ := e["message"].(string)
	data := map[string]any{}
	for k, v := range e {
		if k != "code" && k != "message" {
			data[k] = v
		}
	}
	if len(data) == 0 {
		data = nil
	}
	return &rpcError{Code: rpcCodes[code], Message: msg, Data: data}
}

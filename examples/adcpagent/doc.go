// Command adcpagent is a small advertising seller agent over MCP's
// streamable HTTP (POST /mcp), written to be checked by idemcheck the
// way the Ad Context Protocol's idempotency rules ask: its
// create_media_buy tool takes an idempotency_key argument
// (^[A-Za-z0-9_.:-]{16,255}$), required and validated with the rest of
// the arguments before any lookup; the same key and payload (canonical
// JSON, the key left out) replays the first result with replayed: true;
// another payload under a used key is IDEMPOTENCY_CONFLICT, an error
// carrying code and message only; get_adcp_capabilities declares
// adcp.idempotency {supported, replay_ttl_seconds}. Sessions follow the
// MCP specification: initialize answers with an Mcp-Session-Id every
// later request must carry; answers come as one SSE event when the
// client accepts text/event-stream (as MCP SDKs answer), else as JSON.
// A client whose MCP SDK sends request metadata may give the key as
// _meta["io.adcpagent/idempotency-key"] instead of the argument (both
// given must agree). Keys are scoped by the caller (Authorization:
// Bearer alice|bob) and the tool. GET /effects?key=K says how many media
// buys key K executed (GET /effects: how many in all): idemcheck's
// oracle.
//
// POST /rpc is the same agent as plain JSON-RPC 2.0 over HTTP: no
// session, the method a tool's name and the params its arguments, tool
// errors as JSON-RPC errors with codes of the server range (rpc.go).
//
//	go run ./examples/adcpagent -addr 127.0.0.1:8091 -ttl 3s
//
// ADCPAGENT_DEFECT=name starts a broken build instead (defects.go);
// idemcheck.yaml (the argument), idemcheck-meta.yaml (_meta) and
// idemcheck-jsonrpc.yaml (POST /rpc) describe the agent to idemcheck,
// and idemcheck_test.go proves each build gets the verdict it deserves
// over each face.
//
// It imports nothing of idemcheck's (internal/archtest) and no MCP SDK:
// a pass says something about idemcheck's MCP and JSON-RPC carriers.
package main

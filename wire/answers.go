package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// Reading a GraphQL, JSON-RPC or MCP answer (apispec.Answers): under HTTP
// 200 whatever happened, its outcome is in its body. Answer says which
// status it stands for, so the catalog judges it as it judges an HTTP
// answer, and which part of it a replay must repeat.

// Answer is what an answer of a graphql, jsonrpc or mcp target stands
// for.
type Answer struct {
	// Status is the status the answer stands for: 200 for a success, an
	// error's configured status, or the HTTP status when the answer is
	// not the carrier's (a gateway's 502, an MCP server's 404 for an
	// expired session).
	Status int
	// Body is the result a replay repeats: a GraphQL answer without its
	// top-level extensions (cost and tracing change on every call), a
	// JSON-RPC result or error without the envelope (the id is the
	// request's), an MCP tool result's structured content (or its text
	// parsed as JSON); the replay marker left out.
	Body []byte
	// Code is the error code that decided Status ("" when none did);
	// Replayed the replay marker's value, when the result carries one.
	Code     string
	Replayed string
}

// ReadAnswer reads an answer of target t under profile p.
func ReadAnswer(t *apispec.Target, status int, header http.Header, body []byte) Answer {
	if t.IsJSONRPC() {
		if msg, ok := rpcMessage(header, body); ok {
			return readRPC(t, status, msg)
		}
		return Answer{Status: status, Body: body}
	}
	return readGraphQL(t, status, body)
}

// graphQLAnswer is a GraphQL response's members.
type graphQLAnswer struct {
	Data       json.RawMessage   `json:"data"`
	Errors     []json.RawMessage `json:"errors"`
	Extensions json.RawMessage   `json:"extensions"`
}

func readGraphQL(t *apispec.Target, status int, body []byte) Answer {
	var g graphQLAnswer
	if err := json.Unmarshal(body, &g); err != nil || (g.Data == nil && g.Errors == nil) {
		return Answer{Status: status, Body: body} // not a GraphQL response
	}
	a := Answer{Body: body, Status: status}
	if g.Extensions != nil {
		a.Body = marshal(struct {
			Data   json.RawMessage   `json:"data,omitempty"`
			Errors []json.RawMessage `json:"errors,omitempty"`
		}{g.Data, g.Errors})
	}
	var codes []string
	failed := len(g.Errors) > 0
	for _, e := range g.Errors {
		var v any
		if json.Unmarshal(e, &v) == nil {
			if c, ok := jsonx.Pointer(v, "/extensions/code"); ok {
				codes = append(codes, jsonx.ScalarText(c))
			}
		}
	}
	if data, err := jsonx.Decode(g.Data); err == nil {
		for _, ue := range userErrors(data, 0) {
			failed = true
			codes = append(codes, codesIn(ue, 0)...)
		}
	}
	switch {
	case failed:
		if st, code := t.AnswerStatus(codes); code != "" || status == http.StatusOK {
			a.Status, a.Code = st, code
		} // else a GraphQL-over-HTTP status (401, 4xx for a request error) stands
	case status != http.StatusOK:
		return a
	}
	a.Body, a.Replayed = withoutMarker(t, a.Body)
	return a
}

// userErrors are the entries of every non-empty userErrors list in data
// (Shopify's and most GraphQL APIs' business errors), searched a few
// levels deep.
func userErrors(v any, depth int) []any {
	m, ok := v.(map[string]any)
	if !ok || depth > 4 {
		return nil
	}
	var out []any
	for _, k := range slices.Sorted(maps.Keys(m)) { // one order: the first code decides
		c := m[k]
		if l, ok := c.([]any); ok && k == "userErrors" {
			out = append(out, l...)
			continue
		}
		out = append(out, userErrors(c, depth+1)...)
	}
	return out
}

// codesIn are the values of the "code" members in v, a few levels deep:
// an error's code wherever its protocol keeps it (error.data.code,
// structuredContent.errors[].code, adcp_error.code).
func codesIn(v any, depth int) []string {
	if depth > 4 {
		return nil
	}
	var out []string
	switch d := v.(type) {
	case map[string]any:
		if c, ok := d["code"]; ok {
			if s := jsonx.ScalarText(c); s != "" {
				out = append(out, s)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(d)) {
			if k != "code" {
				out = append(out, codesIn(d[k], depth+1)...)
			}
		}
	case []any:
		for _, c := range d {
			out = append(out, codesIn(c, depth+1)...)
		}
	}
	return out
}

// rpcAnswer is a JSON-RPC 2.0 response.
type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    json.Number     `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// rpcMessage is the JSON-RPC response in an answer: the body, or, from an
// SSE stream (MCP's streamable HTTP), the first event whose data is a
// response (server requests and notifications before it skipped).
func rpcMessage(header http.Header, body []byte) ([]byte, bool) {
	ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if ct != "text/event-stream" {
		return body, isRPCResponse(body)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), MaxBody)
	var data []byte
	flush := func() ([]byte, bool) {
		d := data
		data = nil
		return d, isRPCResponse(d)
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if d, ok := flush(); ok {
				return d, true
			}
		case strings.HasPrefix(line, "data:"):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	return flush()
}

func isRPCResponse(b []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	_, r := m["result"]
	_, e := m["error"]
	return r || e
}

// JSON-RPC 2.0's reserved error codes, read as the HTTP statuses of the
// same failures when no configured code names them.
var rpcCodeStatus = map[string]int{
	"-32700": http.StatusBadRequest, "-32600": http.StatusBadRequest, "-32602": http.StatusBadRequest,
	"-32601": http.StatusNotFound, "-32603": http.StatusInternalServerError,
}

func readRPC(t *apispec.Target, status int, msg []byte) Answer {
	var r rpcAnswer
	d := json.NewDecoder(bytes.NewReader(msg))
	d.UseNumber()
	if d.Decode(&r) != nil {
		return Answer{Status: status, Body: msg}
	}
	if e := r.Error; e != nil {
		codes := []string{e.Code.String()}
		if v, err := jsonx.Decode(e.Data); err == nil {
			codes = append(codes, codesIn(v, 0)...)
		}
		a := Answer{Body: marshal(e), Status: status}
		st, code := t.AnswerStatus(codes)
		if code == "" {
			if s, ok := rpcCodeStatus[e.Code.String()]; ok {
				st, code = s, e.Code.String()
			}
		}
		if code != "" || status == http.StatusOK { // else the HTTP status stands
			a.Status, a.Code = st, code
		}
		return a
	}
	a := Answer{Status: http.StatusOK, Body: r.Result}
	if t.IsMCP() {
		var res struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Structured json.RawMessage `json:"structuredContent"`
			IsError    bool            `json:"isError"`
		}
		if json.Unmarshal(r.Result, &res) == nil {
			switch {
			case res.Structured != nil:
				a.Body = res.Structured
			case len(res.Content) > 0 && res.Content[0].Type == "text" && json.Valid([]byte(res.Content[0].Text)):
				a.Body = []byte(res.Content[0].Text)
			}
			if res.IsError {
				v, _ := jsonx.Decode(a.Body)
				a.Status, a.Code = t.AnswerStatus(codesIn(v, 0))
			}
		}
	}
	if a.Status == http.StatusOK {
		a.Body, a.Replayed = withoutMarker(t, a.Body)
	}
	return a
}

// withoutMarker is body without the replay marker answers.replayed
// names, and the marker's value ("" when absent).
func withoutMarker(t *apispec.Target, body []byte) ([]byte, string) {
	if t.Answers == nil || t.Answers.Replayed == "" {
		return body, ""
	}
	v, err := jsonx.Decode(body)
	if err != nil {
		return body, ""
	}
	m, ok := jsonx.Pointer(v, t.Answers.Replayed)
	if !ok {
		return body, ""
	}
	toks, _ := jsonx.ParsePointer(t.Answers.Replayed)
	if _, ok := setPointer(v, toks, "", false); !ok {
		return body, ""
	}
	return marshal(v), jsonx.ScalarText(m)
}

package initconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// MCPOptions is what init --mcp reads.
type MCPOptions struct {
	// URL is the MCP endpoint (http://127.0.0.1:8091/mcp).
	URL string
	// Headers are "Name: value" fields sent with every call
	// (credentials are written as ${IDEMCHECK_TOKEN_1}).
	Headers []string
	Timeout time.Duration
	Command string
}

// mcpTool is a tools/list entry.
type mcpTool struct {
	Name        string `json:"name"`
	InputSchema struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	} `json:"inputSchema"`
}

// FromMCP writes a config for the tools of an MCP server whose input
// schema has a key argument (AdCP's idempotency_key), read by tools/list
// after the initialize handshake.
func FromMCP(ctx context.Context, o MCPOptions) ([]byte, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--mcp %q: want the server's streamable HTTP endpoint (http://host:port/mcp)", o.URL)
	}
	h := http.Header{}
	for _, line := range o.Headers {
		name, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("--header %q: want 'Name: value'", line)
		}
		h.Set(strings.TrimSpace(name), strings.TrimSpace(v))
	}
	base := u.Scheme + "://" + u.Host
	t := &apispec.Target{BaseURL: base, Carrier: apispec.CarrierMCP, Timeout: o.Timeout}
	c := wire.NewAnswering(t, wire.Client(t, o.Timeout))
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*o.Timeout)
	defer cancel()
	res, err := c.Call(ctx, o.URL, h, "tools/list", map[string]any{})
	if err != nil {
		return nil, fmt.Errorf("--mcp: %w", err)
	}
	var list struct {
		Tools []mcpTool `json:"tools"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		return nil, fmt.Errorf("--mcp %s: tools/list: %v", o.URL, err)
	}
	var picks []mcpTool
	var keyArg string
	names := map[string]bool{}
	for _, tool := range list.Tools {
		names[tool.Name] = true
		for arg := range tool.InputSchema.Properties {
			if keyNameRe.MatchString(arg) && (keyArg == "" || keyArg == arg) {
				keyArg = arg
				picks = append(picks, tool)
				break
			}
		}
	}
	if len(picks) == 0 {
		return nil, fmt.Errorf("--mcp %s: no tool of %d takes a key argument (idempotency_key, idempotencyKey, request_id)", o.URL, len(list.Tools))
	}
	adcp := names["get_adcp_capabilities"]
	root := newMapping()
	root.set("base_url", from(str(base), "from --mcp"))
	root.set("carrier", from(str("mcp"), "an MCP server over streamable HTTP: initialize, then tools/call per request"))
	root.set("key", from(flowKey("pointer", "/"+keyArg), fmt.Sprintf("the tools' input schema has a %s argument", keyArg)))
	if !adcp {
		root.set("ttl", todo(str("24h"), "how long the server keeps a key; enables the expiry cases"))
	}
	pr := sequence()
	for n := 1; n <= 2; n++ {
		m := newMapping()
		m.set("name", str(fmt.Sprintf("user%d", n)))
		hn := newMapping()
		for _, name := range sortedHeaderNames(h) {
			v := h.Get(name)
			if credentialHeader(name) {
				hn.set(name, todo(str(credentialValue(v, n)), fmt.Sprintf("export %s (the second: another user's, for the scope cases)", tokenVar(n))))
			} else {
				hn.set(name, str(v))
			}
		}
		if len(h) == 0 {
			hn.set("Authorization", todo(str(fmt.Sprintf("Bearer ${%s}", tokenVar(n))), "the server's credentials, if it asks for any"))
		}
		m.set("headers", hn.n)
		pr.Content = append(pr.Content, m.n)
	}
	root.set("principals", pr)
	ans := newMapping()
	if adcp {
		ans.set("mismatch", from(sequence(str("IDEMPOTENCY_CONFLICT")), "AdCP's conflict code"))
		ans.set("replayed", from(str("/replayed"), "AdCP marks a replay replayed: true"))
		ans.set("ttl_tool", from(str("get_adcp_capabilities"), "the server lists it: its adcp.idempotency.replay_ttl_seconds is the ttl"))
		ans.set("ttl_pointer", str("/adcp/idempotency/replay_ttl_seconds"))
	} else {
		ans.set("mismatch", todo(emptySequence(), "the error code of a reused key with other arguments (a JSON-RPC error's code, or a code member of an isError result)"))
	}
	ans.set("in_flight", todo(emptySequence(), "the error code of a duplicate still in flight (empty: any error)"))
	root.set("answers", ans.n)
	foot(root.n.Content[len(root.n.Content)-2], "oracle: {url: \"/effects?key={key}\", pointer: /executions}  # TODO: how executions are counted (docs/oracles.md)")
	ops := sequence()
	for _, tool := range picks {
		m := newMapping()
		m.set("name", str(tool.Name))
		m.set("path", from(str(u.EscapedPath()), "from --mcp"))
		m.set("tool", from(str(tool.Name), "tools/list"))
		args := map[string]any{}
		for _, name := range tool.InputSchema.Required {
			if name != keyArg {
				args[name] = schemaSample(tool.InputSchema.Properties[name])
			}
		}
		b, _ := json.Marshal(args)
		var n yaml.Node
		_ = yaml.Unmarshal(b, &n)
		body := n.Content[0]
		body.Style = yaml.FlowStyle
		m.set("body", todo(body, "the arguments of a normal, successful call (each required one has a placeholder)"))
		m.set("id_pointer", todo(str(""), "where the created resource's id is in the tool's structured result (/media_buy_id)"))
		ops.Content = append(ops.Content, m.n)
	}
	root.set("operations", ops)
	prof := newMapping()
	if adcp {
		prof.set("preset", from(str("adcp"), "the server lists get_adcp_capabilities: an AdCP agent"))
	} else {
		prof.set("preset", guessed(str("lenient"), "no document of this server's rules was read"))
	}
	root.set("profile", prof.n)
	return render(root, []string{
		fmt.Sprintf("idemcheck config written by `%s` from tools/list of %s on %s.", o.Command, o.URL, time.Now().UTC().Format("2006-01-02")),
		`Every value says where it came from; check each "guessed:" and fill each "TODO:" (docs/carriers.md).`,
		"Then: idemcheck list --config FILE (what would run), idemcheck run --config FILE.",
	})
}

func flowKey(k, v string) *yaml.Node {
	m := flowMapping()
	m.set(k, str(v))
	return m.n
}

func sortedHeaderNames(h http.Header) []string {
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// credentialValue is v with its secret as ${IDEMCHECK_TOKEN_n}.
func credentialValue(v string, n int) string {
	if scheme, _, ok := strings.Cut(v, " "); ok {
		return fmt.Sprintf("%s ${%s}", scheme, tokenVar(n))
	}
	return fmt.Sprintf("${%s}", tokenVar(n))
}

// schemaSample is a placeholder for a JSON Schema property.
func schemaSample(raw json.RawMessage) any {
	var s struct {
		Type string `json:"type"`
		Enum []any  `json:"enum"`
	}
	_ = json.Unmarshal(raw, &s)
	switch {
	case len(s.Enum) > 0:
		return s.Enum[0]
	case s.Type == "integer":
		return 1
	case s.Type == "number":
		return 1000
	case s.Type == "boolean":
		return true
	case s.Type == "object":
		return map[string]any{}
	case s.Type == "array":
		return []any{}
	}
	return "idemcheck"
}

package initconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

// ProbeOptions is the live endpoint init --probe learns from.
type ProbeOptions struct {
	URL    string // the operation's absolute URL
	Method string // default POST
	Body   string // a JSON object the endpoint accepts
	// Headers are "Name: value" lines sent with every request
	// (credentials become ${IDEMCHECK_TOKEN_n} in the file).
	Headers   []string
	KeyHeader string // default Idempotency-Key
	// Query are "name=value" parameters of another query: sent under a
	// used key, and written as a query mutation.
	Query   []string
	Timeout time.Duration // per request (0: 10s)
	TLS     apispec.TLS
	// HTTP2 speaks HTTP/2 only (--http2: h2 by ALPN, h2c with prior
	// knowledge), for a server that speaks nothing else; the config
	// written says http2: true.
	HTTP2   bool
	Command string
}

// probe is one run of exchanges against the endpoint.
type probe struct {
	env    *scenarios.Env
	target *apispec.Target
	op     *apispec.Operation
	// steps are the exchanges in order, numbered from 1 in the file.
	steps []step
}

type step struct {
	what string
	key  string // the key header as sent ("" : none)
	resp wire.Resp
}

// send makes one exchange: keyLine is the key header sent verbatim
// (empty: none), body nil for the operation's.
func (p *probe) send(ctx context.Context, what, keyLine string, body json.RawMessage) (int, wire.Resp) {
	return p.sendReq(ctx, what, keyLine, scenarios.Req{Body: body})
}

// sendReq is send of r (its body, query) under keyLine.
func (p *probe) sendReq(ctx context.Context, what, keyLine string, r scenarios.Req) (int, wire.Resp) {
	r.Label, r.NoKey = what, keyLine == ""
	if keyLine != "" {
		r.KeyLines = []string{keyLine}
	}
	resp := p.env.Send(ctx, r)
	p.steps = append(p.steps, step{what: what, key: keyLine, resp: resp})
	return len(p.steps), resp
}

func (p *probe) describe(n int) string {
	return fmt.Sprintf("exchange %d (%s) got %s", n, p.steps[n-1].what, p.statusOf(n))
}

// statusOf is exchange n's status, or "no answer".
func (p *probe) statusOf(n int) string {
	if s := p.steps[n-1]; s.resp.Err == nil {
		return fmt.Sprint(s.resp.Status)
	}
	return "no answer"
}

// Probe sends a few requests to a live endpoint and writes a config with
// what they showed, each learnt value commented with its exchange.
func Probe(ctx context.Context, o ProbeOptions) ([]byte, error) {
	t, op, err := probeTarget(o)
	if err != nil {
		return nil, err
	}
	client := wire.Client(t, t.Timeout)
	carrier := wire.NewCarrier(t, client)
	defer carrier.Close()
	if _, err := wire.Preflight(ctx, t, carrier, client); err != nil {
		return nil, err
	}
	p := &probe{env: scenarios.NewEnv(t, op, carrier), target: t, op: op}
	query, _ := probeQuery(o.Query) // checked in probeTarget
	l, err := p.learn(ctx, o.URL, query)
	if err != nil {
		return nil, err
	}
	return p.write(o, l)
}

// probeTarget builds the one-operation target of the probe: the
// credentials are the first principal's, the other headers the
// operation's.
func probeTarget(o ProbeOptions) (*apispec.Target, *apispec.Operation, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, fmt.Errorf("--probe %q: want an absolute http(s) URL", o.URL)
	}
	method := strings.ToUpper(o.Method)
	if method == "" {
		method = http.MethodPost
	}
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil, nil, fmt.Errorf("--method %q: want POST, PUT, PATCH or DELETE", o.Method)
	}
	op := &apispec.Operation{Name: probeName(u.Path), Method: method, Path: u.RequestURI(), Headers: map[string]string{}}
	if strings.TrimSpace(o.Body) != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(o.Body), &m); err != nil {
			return nil, nil, fmt.Errorf("--body: want a JSON object: %v", err)
		}
		op.Body = json.RawMessage(o.Body)
	}
	keyHeader := o.KeyHeader
	if keyHeader == "" {
		keyHeader = DefaultKeyHeader
	}
	creds := map[string]string{}
	for _, h := range o.Headers {
		name, v, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, nil, fmt.Errorf("--header %q: want \"Name: value\"", h)
		}
		if strings.EqualFold(name, keyHeader) {
			return nil, nil, fmt.Errorf("--header %q: the key header is sent by the probe", h)
		}
		if credentialHeader(name) {
			creds[name] = strings.TrimSpace(v)
		} else {
			op.Headers[name] = strings.TrimSpace(v)
		}
	}
	if _, err := probeQuery(o.Query); err != nil {
		return nil, nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	t := &apispec.Target{
		BaseURL: u.Scheme + "://" + u.Host, KeyHeader: keyHeader, KeySyntax: apispec.SFString, Timeout: timeout,
		Principals: []apispec.Principal{{Name: "user1", Headers: creds}}, Operations: []apispec.Operation{*op}, HTTP2: o.HTTP2,
	}
	if err := t.SetTLS(o.TLS); err != nil {
		return nil, nil, fmt.Errorf("tls.%v", err)
	}
	return t, &t.Operations[0], nil
}

// probeQuery reads --query's "name=value" parameters (nil: none).
func probeQuery(params []string) (map[string]string, error) {
	if len(params) == 0 {
		return nil, nil
	}
	q := map[string]string{}
	for _, pv := range params {
		name, v, ok := strings.Cut(pv, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--query %q: want name=value", pv)
		}
		q[name] = v
	}
	return q, nil
}

// credentialHeader: a header that authenticates (its value is a secret).
func credentialHeader(name string) bool {
	l := strings.ToLower(name)
	if l == "authorization" || l == "cookie" || l == "proxy-authorization" {
		return true
	}
	for _, w := range []string{"key", "token", "auth", "secret", "session"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

func probeName(path string) string {
	if r := slug(resource(path)); r != "" {
		return r
	}
	return "operation"
}

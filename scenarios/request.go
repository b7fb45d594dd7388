package scenarios

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// This file is the one request layer every face uses: the conformance
// engine (Env), the chaos driver and the load runner build an operation's
// request, its key header and their HTTP client here, and share one
// preflight.

// ErrUnreachable: the preflight request got no HTTP answer (exit code 4).
var ErrUnreachable = errors.New("target unreachable")

// TLS is how idemcheck talks to an https target: the system roots unless
// CACert names a PEM bundle, a client certificate for mutual TLS. Paths
// are files on the machine running idemcheck.
type TLS struct {
	CACert             string `yaml:"ca_cert" json:"ca_cert,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"`
	ClientCert         string `yaml:"client_cert" json:"client_cert,omitempty"`
	ClientKey          string `yaml:"client_key" json:"client_key,omitempty"`
}

// Config builds the tls.Config; nil when every field is zero (Go's
// defaults: system roots). Errors name the field.
func (o TLS) Config() (*tls.Config, error) {
	if o == (TLS{}) {
		return nil, nil
	}
	c := &tls.Config{InsecureSkipVerify: o.InsecureSkipVerify} //nolint:gosec // the user asked for it (--insecure-skip-verify)
	if o.CACert != "" {
		pem, err := os.ReadFile(o.CACert)
		if err != nil {
			return nil, fmt.Errorf("ca_cert: %v", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_cert %s: no PEM certificate in it", o.CACert)
		}
	}
	if (o.ClientCert == "") != (o.ClientKey == "") {
		return nil, fmt.Errorf("client_cert %q / client_key %q: give both or neither", o.ClientCert, o.ClientKey)
	}
	if o.ClientCert != "" {
		cert, err := tls.LoadX509KeyPair(o.ClientCert, o.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("client_cert/client_key: %v", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// SetTLS applies o (the config's tls:, then the command-line flags) and
// checks it by loading the files.
func (t *Target) SetTLS(o TLS) error {
	c, err := o.Config()
	if err != nil {
		return err
	}
	t.TLS, t.tls = o, c
	return nil
}

// TLSConfig is the target's TLS client configuration (nil: Go's defaults,
// the system roots); callers must not modify it.
func (t *Target) TLSConfig() *tls.Config { return t.tls }

// Transport is NewTransport with the target's TLS settings.
func (t *Target) Transport(maxConns int) http.RoundTripper {
	return newTransport(maxConns, t.tls)
}

// Client is NewClient with the target's TLS settings.
func (t *Target) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     t.Transport(0),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Preflight makes sure something answers HTTP at the base URL and at every
// replica (any status will do) and, when the target declares a key_source,
// that it issues a key. Every face calls it before any traffic; the error
// wraps ErrUnreachable or ErrKeySource.
func Preflight(ctx context.Context, t *Target, c *http.Client) error {
	for _, base := range t.Bases() {
		if err := preflightBase(ctx, t, c, base); err != nil {
			return err
		}
	}
	if t.KeySource != nil {
		if _, err := t.KeySource.Fetch(ctx, t, c, nil); err != nil {
			return err
		}
	}
	return nil
}

// preflightBase makes sure something answers HTTP at base (one replica).
func preflightBase(ctx context.Context, t *Target, c *http.Client, base string) error {
	// A hand-built Target may leave Timeout 0 (no per-request bound).
	d := 5 * time.Second
	if t.Timeout > 0 {
		d = min(t.Timeout, d)
	}
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, base+"/", nil)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnreachable, t.Redact(base), err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnreachable, t.Redact(base), err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return nil
}

// Body returns op's body with the merge patches applied in order.
func (t *Target) Body(op *Operation, patches ...json.RawMessage) json.RawMessage {
	b := op.Body
	for _, p := range patches {
		if len(p) == 0 {
			continue
		}
		merged, err := jsonx.MergePatch(b, p)
		if err != nil { // config validation guarantees objects; keep the body
			continue
		}
		b = merged
	}
	return b
}

// Variant returns the body of op's declared variant name: its raw body,
// or op's body with its merge patch (Operation.VariantBody).
func (t *Target) Variant(op *Operation, name string) (json.RawMessage, Variant, bool) {
	return op.VariantBody(name)
}

// Header is the header of a request of op sent as principal (an index into
// Principals; out of range sends no credentials): the operation's headers,
// a JSON Content-Type when there is a body, the principal's headers. The
// key header is not set (KeyValue).
func (t *Target) Header(op *Operation, principal int, withBody bool) http.Header {
	h := http.Header{}
	for k, v := range op.Headers {
		h.Set(k, v)
	}
	if withBody && h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	if principal >= 0 && principal < len(t.Principals) {
		for k, v := range t.Principals[principal].Headers {
			h.Set(k, v)
		}
	}
	return h
}

// KeyValue writes key as the target sends it: an RFC 9651 sf-string, or raw.
func (t *Target) KeyValue(key string) string {
	if t.KeySyntax == Raw {
		return key
	}
	if plainKey(key) { // the common case, without the encoder's allocations
		return `"` + key + `"`
	}
	v, err := httpsfv.Marshal(httpsfv.NewItem(key))
	if err != nil { // only non-ASCII keys fail; send them raw so the server decides
		return key
	}
	return v
}

// plainKey: printable ASCII without the characters an sf-string escapes.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Mark writes key's token for the downstream double into a request of op
// (every face calls it: the conformance engine's Env.Send, the chaos
// driver, the load targets): at op's marker (a body pointer, the rest of
// the body byte for byte; a header, set in h; a query parameter), and
// makes the double count the key's calls. It returns the URL and body to
// send; without a double they are unchanged.
func (t *Target) Mark(op *Operation, key, rawURL string, h http.Header, body []byte) (string, []byte) {
	if t.downstream == nil || key == "" {
		return rawURL, body
	}
	tok := t.track(key)
	m := op.Marker
	if m == nil {
		return rawURL, body
	}
	switch {
	case m.Header != "":
		h.Set(m.Header, tok)
	case m.Query != "":
		sep := "?"
		if strings.Contains(rawURL, "?") {
			sep = "&"
		}
		rawURL += sep + m.Query + "=" + tok // a token needs no escaping
	default:
		value := []byte(`"` + tok + `"`)
		if out, ok := jsonx.Replace(body, m.Pointer, value); ok {
			return rawURL, out
		}
		// The body lost the member (a patch removed it): add it back.
		if patch, ok := pointerPatch(m.Pointer, value); ok {
			if out, err := jsonx.MergePatch(body, patch); err == nil && isJSONObject(body) {
				return rawURL, out
			}
		}
	}
	return rawURL, body
}

// pointerPatch is the merge patch setting value at p (objects only).
func pointerPatch(p string, value []byte) ([]byte, bool) {
	toks, err := jsonx.ParsePointer(p)
	if err != nil || len(toks) == 0 {
		return nil, false
	}
	out := value
	for i := len(toks) - 1; i >= 0; i-- {
		k, _ := json.Marshal(toks[i]) // a string always marshals
		out = append(append(append([]byte("{"), k...), ':'), append(out, '}')...)
	}
	return out, true
}

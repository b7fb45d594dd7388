package apispec

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"

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
	if withBody && h.Get("Content-Type") == "" && !t.IsGRPC() { // gRPC sets its own
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

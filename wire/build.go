package wire

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// Request is one request of an operation as a case or a driver describes
// it. Zero values mean "the normal call".
type Request struct {
	Label string
	// Key is the idempotency key, bare; Build writes it in the target's
	// syntax.
	Key string
	// NoKey sends no key field at all.
	NoKey bool
	// KeyLines, when set, are sent verbatim as key field lines (malformed
	// and repeated-field probes); Key is then ignored.
	KeyLines []string
	// Principal indexes Target.Principals; -1 sends no credentials.
	Principal int
	// Body replaces the operation's body.
	Body json.RawMessage
	// Method and Path override the operation's.
	Method, Path string
	// Base replaces Target.BaseURL: one of Target.Replicas.
	Base string
	// Query sets these parameters on the path's query, replacing any of
	// the same name (a mutation of the query).
	Query map[string]string
	// Headers sets these fields over the operation's and the principal's
	// (a mutation of the header, Accept-Encoding).
	Headers map[string]string
	// KeyName, when set, is the key field's name exactly as it goes on
	// the wire over HTTP/1.1 (idempotency-key): Build puts it in the
	// header map as is, which net/http writes verbatim (only Set and Add
	// canonicalise). Empty: the target's key_header, canonical.
	KeyName string
	// FirstSent, when set, is the AEP-155 key's first_sent instead of the
	// time the key was first sent (Target.FirstSent): expired, future and
	// changed first_sent probes.
	FirstSent time.Time
}

// Build is the exchange r describes on op: method, URL, fields (the key in
// the target's syntax) and body, not yet sent.
func Build(t *apispec.Target, op *apispec.Operation, r Request) Exchange {
	method, path := op.Method, op.Path
	if r.Method != "" {
		method = r.Method
	}
	if r.Path != "" {
		path = r.Path
	}
	body := r.Body
	if body == nil {
		body = op.Body
	}
	base := t.BaseURL
	if r.Base != "" {
		base = r.Base
	}
	if len(r.Query) > 0 {
		path = withQuery(path, r.Query)
	}
	x := Exchange{Label: r.Label, Request: ExchangeRequest{Method: method, URL: base + path,
		Header: t.Header(op, r.Principal, len(body) > 0), Body: body}}
	for k, v := range r.Headers {
		x.Request.Header.Set(k, v)
	}
	if t.KeyInBody() {
		// The key is in the payload or the GraphQL document; a probe's
		// raw key lines are its first line's value, as for a gRPC field.
		key, present := r.Key, !r.NoKey
		if r.KeyLines != nil {
			key, present = "", len(r.KeyLines) > 0
			if present {
				key = r.KeyLines[0]
			}
		}
		x.Request.Body = bodyWithKey(t, op, body, key, present)
		if t.ReadsAnswers() {
			x.Request.Header.Set("Content-Type", "application/json")
		}
		if t.IsMCP() { // streamable HTTP: the server may answer either way
			x.Request.Header.Set("Accept", "application/json, text/event-stream")
		}
		return x
	}
	if t.KeyField() != "" {
		// The key is a field of the request message (AIP-155, AEP-155);
		// a probe's raw key lines are its first line's value.
		key, present := r.Key, !r.NoKey
		if r.KeyLines != nil {
			key, present = "", len(r.KeyLines) > 0
			if present {
				key = r.KeyLines[0]
			}
		}
		x.Request.Body = withKeyField(t, body, key, present, r.FirstSent)
		return x
	}
	hk := http.CanonicalHeaderKey(t.KeyHeader)
	if r.KeyName != "" {
		hk = r.KeyName
	}
	switch {
	case r.KeyLines != nil:
		x.Request.Header[hk] = append([]string(nil), r.KeyLines...)
	case !r.NoKey:
		x.Request.Header[hk] = []string{t.KeyValue(r.Key)}
	}
	return x
}

// withQuery is path with the parameters of set replacing those of the same
// name in its query. The rest of the query keeps its bytes: a server may
// read its parameters in the order they were sent.
func withQuery(path string, set map[string]string) string {
	p, raw, _ := strings.Cut(path, "?")
	var kept []string
	for piece := range strings.SplitSeq(raw, "&") {
		name, _, _ := strings.Cut(piece, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if _, replaced := set[name]; piece != "" && !replaced {
			kept = append(kept, piece)
		}
	}
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		kept = append(kept, url.QueryEscape(name)+"="+url.QueryEscape(set[name]))
	}
	return p + "?" + strings.Join(kept, "&")
}

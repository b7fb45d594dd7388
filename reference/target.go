package reference

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// requestPart is what, besides the body, makes a request the one a record
// was claimed for: the query, parameters in canonical order, and the
// fields WithFingerprintHeaders names. Another query (?capture=false) or
// another API version under a used key is another request, answered 422
// like a changed body. It is "" for a request with neither, so such
// requests keep the body-only fingerprint records always had.
func (m *middleware) requestPart(r *http.Request) string {
	var b strings.Builder
	if !m.defects.has(NoQueryFingerprint) {
		if q := canonicalQuery(r.URL.RawQuery); q != "" {
			b.WriteString("?")
			b.WriteString(q)
		}
	}
	for _, name := range m.fingerprintHeaders {
		lines, ok := r.Header[name]
		if !ok {
			continue // absent and present differ: the name is written only when present
		}
		// Field lines combine with commas (RFC 9110 5.3); names and values
		// never contain a newline, so the layout is unambiguous.
		b.WriteString("\n")
		b.WriteString(name)
		b.WriteString(":")
		for i, v := range lines {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strings.TrimSpace(v))
		}
	}
	return b.String()
}

// canonicalQuery is raw in one spelling per meaning: every parameter
// decoded (%41 is A, + is a space) and escaped again, the parameters
// sorted by name, repeated names keeping the order of their values (which
// an application may rely on), empty pieces dropped, a bare name equal to
// one with an empty value (as url.ParseQuery reads them).
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	type param struct{ name, value string }
	var params []param
	for piece := range strings.SplitSeq(raw, "&") {
		if piece == "" {
			continue
		}
		name, value, _ := strings.Cut(piece, "=")
		params = append(params, param{unescapeQuery(name), unescapeQuery(value)})
	}
	slices.SortStableFunc(params, func(a, b param) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	for i, p := range params {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(p.name))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(p.value))
	}
	return b.String()
}

// unescapeQuery decodes s, or keeps it as sent when it is not valid
// percent-encoding (a server that reads it leniently sees the same).
func unescapeQuery(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// requestHash is the hex SHA-256 of requestPart, "" for "".
func requestHash(part string) string {
	if part == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(part))
	return hex.EncodeToString(sum[:])
}

// withRequest joins a body hash and a request hash into what a record
// stores: the body hash alone when there is no request part, so the two
// forms never meet (one is 64 hex digits, the other longer).
func withRequest(body, request string) string {
	if request == "" {
		return body
	}
	return body + ";" + request
}

// equalsJoined reports s == withRequest(string(body), request) without
// building the joined string (the replay fast path stays allocation-free).
func equalsJoined(s string, body []byte, request string) bool {
	if request == "" {
		return s == string(body)
	}
	n := len(body)
	return len(s) == n+1+len(request) && s[:n] == string(body) && s[n] == ';' && s[n+1:] == request
}

package initconfig

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Query and header parameters are part of what a request asks for: the
// same key with another ?capture= or another API version is another
// request. init writes a mutation for each one an operation declares (the
// mismatch cases send it under a used key), leaving out the key,
// credentials, content negotiation and tracing, which say nothing of what
// is asked.

// paramMutation is another value of one query or header parameter.
type paramMutation struct {
	name, in, param, value string
	why                    string
}

// requestParams are o's parameters that are part of its request: the
// query parameters and header fields its normal request carries (the
// required ones, with their example) and a mutation for each.
func (a *analysis) requestParams(o operation) (query, headers [][2]string, muts []paramMutation) {
	creds := a.credentialParams()
	for _, p := range params(o) {
		if (p.In != openapi3.ParameterInQuery && p.In != openapi3.ParameterInHeader) ||
			creds[p.In+" "+strings.ToLower(p.Name)] || credentialHeader(p.Name) ||
			(p.In == openapi3.ParameterInHeader && (strings.EqualFold(p.Name, a.keyHeader) || !requestHeader(p.Name))) {
			continue
		}
		v, _ := paramValue(p)
		switch v.(type) {
		case map[string]any, []any: // a style (form, deepObject) init does not write
			continue
		}
		s := paramSchema(p)
		normal, other := fmt.Sprint(v), fmt.Sprint(v)
		why := fmt.Sprintf("the optional %s parameter %s, absent from the normal request", p.In, p.Name)
		if p.Required || (s != nil && s.Default != nil && fmt.Sprint(s.Default) == normal) {
			c, ok := changed(s, v)
			if !ok {
				continue
			}
			other = fmt.Sprint(c)
			why = fmt.Sprintf("another value of the %s parameter %s", p.In, p.Name)
		}
		if p.Required {
			if p.In == openapi3.ParameterInQuery {
				query = append(query, [2]string{p.Name, normal})
			} else {
				headers = append(headers, [2]string{p.Name, normal})
			}
		}
		muts = append(muts, paramMutation{name: "other-" + slug(p.Name), in: p.In, param: p.Name, value: other, why: why})
	}
	return query, headers, muts
}

// credentialParams are the "in name" (lower case) of the parameters the
// document's API key schemes put a secret in.
func (a *analysis) credentialParams() map[string]bool {
	out := map[string]bool{}
	if a.doc.Components == nil {
		return out
	}
	for _, ref := range a.doc.Components.SecuritySchemes {
		if ref != nil && ref.Value != nil && strings.EqualFold(ref.Value.Type, "apiKey") {
			out[strings.ToLower(ref.Value.In)+" "+strings.ToLower(ref.Value.Name)] = true
		}
	}
	return out
}

// requestHeader reports that a header field may be part of what a request
// asks for: not content negotiation or framing, conditions, or tracing.
func requestHeader(name string) bool {
	l := strings.ToLower(name)
	switch l {
	case "host", "user-agent", "connection", "keep-alive", "transfer-encoding", "te", "expect", "upgrade",
		"range", "prefer", "cache-control", "pragma", "origin", "referer", "baggage", "traceparent", "tracestate":
		return false
	}
	for _, p := range []string{"accept", "content-", "if-"} {
		if strings.HasPrefix(l, p) {
			return false
		}
	}
	for _, w := range []string{"request-id", "requestid", "correlation", "trace", "span-id"} {
		if strings.Contains(l, w) {
			return false
		}
	}
	return true
}

// withQuery is path with the parameters appended to its query.
func withQuery(path string, params [][2]string) string {
	for _, p := range params {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + url.QueryEscape(p[0]) + "=" + url.QueryEscape(p[1])
	}
	return path
}

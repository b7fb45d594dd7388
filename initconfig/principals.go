package initconfig

import (
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"
)

// principals are two users from the operations' security requirements,
// their secrets in ${IDEMCHECK_TOKEN_1} and ${IDEMCHECK_TOKEN_2}.
func (a *analysis) principals(ops []operation) (*yaml.Node, []string) {
	// Every alternative of every operation's requirement, in order: the
	// first idemcheck can send is the principals' (one set for all).
	var req openapi3.SecurityRequirements
	for _, o := range ops {
		if o.op.Security != nil {
			req = append(req, *o.op.Security...)
		} else {
			req = append(req, a.doc.Security...)
		}
	}
	var schemes openapi3.SecuritySchemes
	if a.doc.Components != nil {
		schemes = a.doc.Components.SecuritySchemes
	}
	var unsupported []string
	var heads [][2]string
	var why []string
	for _, alt := range req {
		names := sortedKeys(alt)
		if len(names) == 0 {
			continue
		}
		h, w, problem := sendable(names, schemes)
		switch {
		case problem != "":
			unsupported = append(unsupported, problem)
		case heads == nil || len(h) < len(heads): // the fewest secrets to set
			heads, why = h, w
		}
	}
	if heads != nil {
		return twoUsers(heads), []string{"From the security scheme " + strings.Join(why, " + ") + "."}
	}
	seq := sequence()
	p := newMapping()
	p.set("name", str("anonymous"))
	seq.Content = append(seq.Content, p.n)
	lines := []string{"TODO: the document declares no security scheme idemcheck can send; add the headers that authenticate a user,",
		"and a second principal for the scope cases (one user's key must not answer another's)."}
	if len(unsupported) > 0 {
		lines = append(lines, "Not sendable as a header: "+strings.Join(unsupported, "; ")+".")
	}
	return seq, lines
}

// twoUsers are the principals user1 and user2 sending heads, the
// secrets in IDEMCHECK_TOKEN_n (IDEMCHECK_TOKEN_n_2, ... for more).
func twoUsers(heads [][2]string) *yaml.Node {
	seq := sequence()
	for i, whose := range []string{"a user's secret", "another user's, for the scope cases"} {
		n := i + 1
		p := newMapping()
		p.set("name", str(fmt.Sprintf("user%d", n)))
		hs := flowMapping()
		var vars []string
		for i, hv := range heads {
			name := tokenVar(n)
			if i > 0 {
				name = fmt.Sprintf("%s_%d", name, i+1)
			}
			vars = append(vars, name)
			hs.set(hv[0], quoted(strings.Replace(hv[1], "${}", "${"+name+"}", 1)))
		}
		p.set("headers", hs.n)
		todo(hs.n, fmt.Sprintf("export %s: %s", strings.Join(vars, " and "), whose))
		seq.Content = append(seq.Content, p.n)
	}
	return seq
}

// sendable is the headers that carry one security requirement's secrets
// (header name, value with ${} where the variable goes), with the schemes
// they come from; problem says why idemcheck cannot send them.
func sendable(names []string, schemes openapi3.SecuritySchemes) (heads [][2]string, why []string, problem string) {
	for _, name := range names {
		ref := schemes[name]
		if ref == nil || ref.Value == nil {
			return nil, nil, name + " (not in components.securitySchemes)"
		}
		h, v, w, ok := credential(name, ref.Value)
		if !ok {
			return nil, nil, w
		}
		for _, have := range heads {
			if strings.EqualFold(have[0], h) {
				return nil, nil, strings.Join(names, " + ") + " (two secrets in one " + h + " header)"
			}
		}
		heads = append(heads, [2]string{h, v})
		why = append(why, w)
	}
	return heads, why, ""
}

// credential is the header a security scheme puts its secret in; value
// holds ${} where the environment variable goes.
func credential(name string, s *openapi3.SecurityScheme) (header, value, why string, ok bool) {
	switch strings.ToLower(s.Type) {
	case "http":
		switch strings.ToLower(s.Scheme) {
		case "bearer":
			return "Authorization", "Bearer ${}", name + " (http bearer)", true
		case "basic":
			return "Authorization", "Basic ${}", name + " (http basic: the variable holds base64 of user:password)", true
		}
		return "", "", fmt.Sprintf("%s (http %s)", name, s.Scheme), false
	case "apikey":
		switch strings.ToLower(s.In) {
		case "header":
			return s.Name, "${}", fmt.Sprintf("%s (API key in the %s header)", name, s.Name), true
		case "cookie":
			return "Cookie", s.Name + "=${}", fmt.Sprintf("%s (API key in the %s cookie)", name, s.Name), true
		}
		return "", "", fmt.Sprintf("%s (API key in the %s query parameter)", name, s.Name), false
	case "oauth2", "openidconnect":
		return "Authorization", "Bearer ${}", name + " (" + s.Type + ": the variable holds an access token)", true
	}
	return "", "", fmt.Sprintf("%s (%s)", name, s.Type), false
}

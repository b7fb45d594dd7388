package wire

import (
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// Exchange is one HTTP request and what came back, kept as evidence.
type Exchange struct {
	Label    string            `json:"label,omitempty"`
	Request  ExchangeRequest   `json:"request"`
	Response *ExchangeResponse `json:"response,omitempty"`
	Error    string            `json:"error,omitempty"`
	Start    time.Time         `json:"start"`
	Duration time.Duration     `json:"duration_ns"`
}

// ExchangeRequest is the request half of an Exchange.
type ExchangeRequest struct {
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// ExchangeResponse is the response half of an Exchange.
type ExchangeResponse struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// MaxBody bounds what a response may make us buffer.
const MaxBody = 4 << 20

// Curl returns a copy-pasteable curl command reproducing the request (for
// a gRPC call, a grpcurl command).
func (x Exchange) Curl() string {
	if apispec.IsGRPCURL(x.Request.URL) {
		return grpcCurl(x)
	}
	var b strings.Builder
	b.WriteString("curl -i -X " + x.Request.Method + " " + curlWord(x.Request.URL))
	keys := make([]string, 0, len(x.Request.Header))
	for k := range x.Request.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range x.Request.Header[k] {
			if v == "" { // curl drops "Name:" but sends "Name;" as an empty header
				b.WriteString(" -H " + ShellQuote(k+";"))
				continue
			}
			b.WriteString(" -H " + curlWord(k+": "+v))
		}
	}
	if len(x.Request.Body) > 0 {
		b.WriteString(" --data-binary " + ShellQuote(string(x.Request.Body)))
	}
	return b.String()
}

// ShellQuote quotes s as one POSIX shell word.
func ShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// curlWord quotes s for a POSIX shell, leaving each ${NAME} placeholder
// outside the single quotes so the shell expands it: a reproduction reads
// the secret from the environment instead of carrying it.
func curlWord(s string) string {
	locs := apispec.EnvRef.FindAllStringIndex(s, -1)
	if locs == nil {
		return ShellQuote(s)
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		if l[0] > last {
			b.WriteString(ShellQuote(s[last:l[0]]))
		}
		b.WriteString(`"` + s[l[0]:l[1]] + `"`)
		last = l[1]
	}
	if last < len(s) {
		b.WriteString(ShellQuote(s[last:]))
	}
	return b.String()
}

// ShellWord quotes s for a POSIX shell as the curl reproductions do: each
// ${NAME} placeholder stays outside the single quotes, so a recorded
// command line reads its secrets from the environment.
func ShellWord(s string) string { return curlWord(s) }

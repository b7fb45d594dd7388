package reports

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestHTML: the page carries the counts and the evidence, and text from
// the target (bodies, headers) is escaped, never markup. The page as a
// reader sees it is checked in a browser by cmd/idemcheck's
// TestHTMLReportsInBrowser.
func TestHTML(t *testing.T) {
	rep := sample(false)
	hostile := `</pre><script>alert(1)</script><img src=x onerror=alert(2)>`
	rep.Results[2].Exchanges[0].Response.Body = []byte(hostile)
	rep.Results[2].Exchanges[0].Response.Header = http.Header{"X-Evil": {hostile}}
	out := render(t, func(b *bytes.Buffer) error { return HTML(b, rep) })
	c := Tally(rep)
	for _, tc := range []struct{ rule, want string }{
		{"counts are Tally's (a known failure that passes fails)", `data-count="failed">2<`},
		{"expected failures are counted apart", `data-count="expected_failures">1<`},
		{"requirement coverage per level", `data-req="MUST.without_evidence">1<`},
		{"the outcome with its exit code", `data-outcome="fail">fail (exit 1)<`},
		{"a failure shows its spec sentence", "The server SHOULD do the replay thing."},
		{"expected vs observed", `<dd class="observed">2 executions</dd>`},
		{"a curl reproduction per exchange", `<pre class="curl-cmd">curl -i -X POST &#39;http://127.0.0.1:9/v1/charges&#39;`},
		{"a body that is not UTF-8 is described", "(2 bytes, not UTF-8; the JSON report has them in base64)"},
		{"a MUST without evidence is filtered apart", `data-status="incomplete" data-name="concurrent/burst@charges"`},
		{"a known failure that passes fails", `data-status="fail" data-name="scope/other-user@charges"`},
		{"a skip says why on its row, without expanding it", `<span class="why">no ttl declared</span></summary>`},
		{"a warning carries its observation on its row", `<span class="why">expected 400, observed 201</span></summary>`},
		{"skips are grouped by reason", `<li>skip   1 case: no ttl declared — expiry/fresh-after-ttl</li>`},
		{"hostile bodies are escaped", `&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;`},
	} {
		if !strings.Contains(out, tc.want) {
			t.Errorf("rule: %s: missing %q", tc.rule, tc.want)
		}
	}
	if strings.Contains(out, "<script>alert") || strings.Contains(out, "<img src=x") {
		t.Error("rule: text from the target is never markup")
	}
	if n := len(regexp.MustCompile(`<details class="result`).FindAllString(out, -1)); n != c.Total() {
		t.Errorf("rule: one expandable line per instance: %d, want %d", n, c.Total())
	}
	if strings.Contains(out, "http://") && regexp.MustCompile(`<(script|link|img)[^>]+src="https?:`).MatchString(out) {
		t.Error("rule: self-contained: nothing is loaded from the network")
	}
}

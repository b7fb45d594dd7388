package chaosreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/chaos"
)

// TestHTML: the page is drawn from the history and the checker's
// report: every key with a finding is drilled down (violations open),
// other keys up to the bound, text from the target escaped; its counts
// are the report's. The page as a reader sees it is checked in Chromium
// by cmd/idemcheck's TestHTMLReportsInBrowser.
func TestHTML(t *testing.T) {
	var hist bytes.Buffer
	h := json.NewEncoder(&hist) // the history's lines, as the proxy and the driver write them
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const hostile = `<script>alert(1)</script>`
	n := htmlOtherKeys + 5
	for i := range n {
		key := fmt.Sprintf("k%03d", i)
		ev := chaos.Event{Type: "attempt", Time: t0.Add(time.Duration(i) * time.Millisecond), Key: key, Attempt: 1, Method: "POST", Path: "/v1/charges",
			Client: chaos.ClientOK, Status: 201, Upstream: []chaos.Upstream{{Status: 201, ID: "ch_" + key}}}
		if i == n-1 { // the last key executes twice: a violation past the bound
			ev.Fault, ev.Client, ev.Status = "drop-response", chaos.ClientUnknown, 0
			must(t, h.Encode(&ev))
			ev = chaos.Event{Type: "attempt", Time: ev.Time.Add(time.Second), Key: key, Attempt: 2, Method: "POST", Path: "/v1/charges",
				Client: chaos.ClientOK, Status: 201, Upstream: []chaos.Upstream{{Status: 201, ID: "ch_again"}}}
		}
		must(t, h.Encode(&ev))
		op := chaos.Op{Type: "op", Key: key, Operation: "charges", Kind: chaos.KindNormal, Attempts: ev.Attempt, Outcome: chaos.ClientOK, Status: 201, ID: ev.Upstream[0].ID}
		if i == n-1 {
			op.Error = hostile
		}
		must(t, h.Encode(&op))
	}
	c := chaos.NewChecker()
	if _, err := chaos.ReadHistory(bytes.NewReader(hist.Bytes()), c, false); err != nil {
		t.Fatal(err)
	}
	rep := c.Report()
	if len(rep.Violations) != 1 {
		t.Fatalf("want the one double execution: %+v", rep.Violations)
	}
	var out bytes.Buffer
	if err := HTML(&out, bytes.NewReader(hist.Bytes()), rep, HTMLRun{Target: "http://127.0.0.1:9", Requested: n}); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	last := fmt.Sprintf("k%03d", n-1)
	for _, tc := range []struct{ rule, want string }{
		{"the violation's key is drilled down first, open", `<details class="key" id="key-` + last + `" data-key="` + last + `" data-class="violation" open>`},
		{"its finding is shown with its rule", `<p class="finding" data-rule="double-execution"><b>double-execution</b>: 2 distinct created ids for one key</p>`},
		{"it has a tick on the timeline linking to it", `<a href="#key-` + last + `"><line class="tick violation" data-key="` + last + `"`},
		{"the count of violations is the report's", `data-violations="1"`},
		{"keys past the bound are counted, not dropped silently", fmt.Sprintf(`data-keys-shown="%d">%d</span> keys shown, 4 more in the history`, htmlOtherKeys+1, htmlOtherKeys+1)},
		{"text from the target is escaped", `, error &lt;script&gt;alert(1)&lt;/script&gt;`},
	} {
		if !strings.Contains(page, tc.want) {
			t.Errorf("rule: %s: missing %q", tc.rule, tc.want)
		}
	}
	if strings.Contains(page, hostile) {
		t.Error("rule: text from the target is never markup")
	}
	if got := len(regexp.MustCompile(`<details class="key"`).FindAllString(page, -1)); got != htmlOtherKeys+1 {
		t.Errorf("rule: %d keys drilled down, want the %d first plus the violation", got, htmlOtherKeys)
	}
	if regexp.MustCompile(`<(script|link|img)[^>]+src=`).MatchString(page) {
		t.Error("rule: self-contained: nothing is loaded")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package reports_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

// A client run's HTML shows each case run's attempts on a timeline: a
// 429 with Retry-After, the gap, then the 201; a server run's shows none.
func TestHTMLClientTimeline(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	ex := func(n string, at time.Duration, status int, ra string) wire.Exchange {
		resp := &wire.ExchangeResponse{Status: status, Header: http.Header{}}
		if ra != "" {
			resp.Header.Set("Retry-After", ra)
		}
		return wire.Exchange{Label: "run rate-limited-429/12 attempt " + n + ` (connection 1, key "k")`, Start: t0.Add(at), Duration: 2 * time.Millisecond,
			Request: wire.ExchangeRequest{Method: "POST", URL: "http://127.0.0.1/run/x/1/v1/charges"}, Response: resp}
	}
	res := scenarios.Result{Meta: scenarios.Meta{ID: "retry/after-429", Family: "retry", Level: scenarios.Must}, Status: scenarios.Pass,
		Exchanges: []wire.Exchange{ex("1", 0, 429, "1"), ex("2", time.Second, 201, "")}}
	for _, client := range []bool{true, false} {
		var b bytes.Buffer
		if err := reports.HTML(&b, &scenarios.Report{Client: client, Profile: "ietf", Results: []scenarios.Result{res}}); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		has := strings.Contains(page, `class="tl-bar c-warn"`) && strings.Contains(page, `class="tl-bar c-pass"`) &&
			strings.Contains(page, "429 Retry-After: 1") && strings.Contains(page, "run rate-limited-429/12 · 1.002s")
		if has != client {
			t.Errorf("client %v: timeline shown %v", client, has)
		}
	}
}

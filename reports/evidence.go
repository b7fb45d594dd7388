package reports

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

// maxBodyShown bounds a body printed in text evidence; JSON keeps it whole.
const maxBodyShown = 512

// maxExchangesShown bounds the exchanges printed for one failure (a burst
// case has dozens); JSON keeps them all.
const maxExchangesShown = 6

// FailureText is the evidence for one result as plain text: requirement
// sentence, expected vs observed, the exchanges and a curl reproduction
// of each shown request. indent prefixes every line.
func FailureText(r scenarios.Result, indent string) string {
	var b strings.Builder
	line := func(format string, args ...any) {
		b.WriteString(indent + fmt.Sprintf(format, args...) + "\n")
	}
	line("%s %s [%s] %s", r.Name(), r.Status, r.Level, strings.Join(r.Requirements, ", "))
	if r.Requirement != "" {
		line("requirement: %s", r.Requirement)
	}
	if r.Explanation != "" {
		line("rule:        %s", r.Explanation)
	}
	if r.Expected != "" {
		line("expected:    %s", r.Expected)
	}
	if r.Observed != "" {
		line("observed:    %s", r.Observed)
	}
	if r.Reason != "" {
		line("reason:      %s", r.Reason)
	}
	for i, m := range r.Missed {
		line("attempt %d:   missed its timing, tried again under fresh keys: %s", i+1, m)
	}
	for _, d := range slices.Concat(r.Downstream, r.Events) {
		line("%s", d)
	}
	exchanges := r.Exchanges
	if r.Attempts > 1 {
		// The deciding attempt's exchanges; the missed ones' are in the JSON.
		last := fmt.Sprintf("attempt %d: ", r.Attempts)
		i := slices.IndexFunc(exchanges, func(ex wire.Exchange) bool { return strings.HasPrefix(ex.Label, last) })
		if i > 0 {
			line("exchanges of attempt %d (the %d earlier attempts' %d exchanges are in the JSON report):", r.Attempts, r.Attempts-1, i)
			exchanges = exchanges[i:]
		}
	} else if len(exchanges) > 0 {
		line("exchanges:")
	}
	for i, ex := range exchanges {
		if i == maxExchangesShown {
			line("  ... %d more exchanges (all are in the JSON report)", len(exchanges)-i)
			break
		}
		writeExchange(&b, indent+"  ", i+1, ex)
	}
	return b.String()
}

func writeExchange(b *strings.Builder, indent string, n int, ex wire.Exchange) {
	label := ex.Label
	if label == "" {
		label = "request"
	}
	fmt.Fprintf(b, "%s#%d %s: %s %s", indent, n, label, ex.Request.Method, ex.Request.URL)
	switch {
	case ex.Response != nil:
		fmt.Fprintf(b, " -> %d (%s)\n", ex.Response.Status, ex.Duration.Round(100_000))
	case ex.Error != "":
		fmt.Fprintf(b, " -> error: %s (%s)\n", ex.Error, ex.Duration.Round(100_000))
	default:
		b.WriteString("\n")
	}
	in := indent + "   "
	writeHeaders(b, in+"> ", ex.Request.Header)
	if len(ex.Request.Body) > 0 {
		fmt.Fprintf(b, "%s> %s\n", in, shownBody(ex.Request.Body))
	}
	if ex.Response != nil {
		writeHeaders(b, in+"< ", ex.Response.Header)
		if len(ex.Response.Body) > 0 {
			fmt.Fprintf(b, "%s< %s\n", in, shownBody(ex.Response.Body))
		}
	}
	fmt.Fprintf(b, "%sreproduce: %s\n", in, ex.Curl())
}

func writeHeaders(b *strings.Builder, prefix string, h http.Header) {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, v := range h[name] {
			fmt.Fprintf(b, "%s%s: %s\n", prefix, name, v)
		}
	}
}

// shownBody is body as one printable line, cut at maxBodyShown bytes.
func shownBody(body []byte) string {
	if !utf8.Valid(body) {
		return fmt.Sprintf("(%d bytes, not UTF-8)", len(body))
	}
	s := string(body)
	cut := ""
	if len(s) > maxBodyShown {
		s = strings.ToValidUTF8(s[:maxBodyShown], "")
		cut = fmt.Sprintf(" ... (%d bytes)", len(body))
	}
	return strings.Map(printable, strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", `\n`)) + cut
}

// printable replaces control characters, which also keeps them out of
// XML text where they are not allowed.
func printable(r rune) rune {
	if (r < 0x20 && r != '\t') || r == 0x7f {
		return '\uFFFD'
	}
	return r
}

package loadreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/reports/internal/words"
)

// JSON writes the summary as indented JSON: the schema idemcheck.load/v1
// (docs/load.md).
func JSON(w io.Writer, r *load.Summary) error { return words.JSON(w, r) }

// tableRow is one figure for every path of the side-by-side table.
type tableRow struct {
	Name  string
	Cells []string
}

// table is the figures of every measured path side by side, the console's
// and the HTML report's.
func table(r *load.Summary) (cols []load.Path, rows []tableRow) {
	for _, p := range load.Paths {
		if r.Paths[p] != nil {
			cols = append(cols, p)
		}
	}
	row := func(name string, f func(*load.PathStats) string) {
		tr := tableRow{Name: name}
		for _, p := range cols {
			tr.Cells = append(tr.Cells, f(r.Paths[p]))
		}
		rows = append(rows, tr)
	}
	row("requests", func(s *load.PathStats) string { return fmt.Sprint(s.Requests) })
	row("achieved rate/s", func(s *load.PathStats) string { return fmt.Sprintf("%.1f", s.Rate) })
	row("throughput/s", func(s *load.PathStats) string { return fmt.Sprintf("%.1f", s.Throughput) })
	row("success", func(s *load.PathStats) string { return fmt.Sprintf("%.2f%%", 100*s.Success) })
	lat := func(name string, get func(load.Latency) float64) {
		row(name, func(s *load.PathStats) string { return fmtMs(get(s.LatencyMs)) })
	}
	lat("p50", func(l load.Latency) float64 { return l.P50 })
	lat("p90", func(l load.Latency) float64 { return l.P90 })
	lat("p99", func(l load.Latency) float64 { return l.P99 })
	lat("p99.9", func(l load.Latency) float64 { return l.P999 })
	lat("max", func(l load.Latency) float64 { return l.Max })
	row(fmt.Sprintf("very slow (>=%s)", fmtMs(r.VerySlowMs)), func(s *load.PathStats) string { return fmt.Sprint(s.VerySlow) })
	codesRow, codesOf := "status codes", func(s *load.PathStats) map[string]uint64 { return s.StatusCodes }
	for _, s := range r.Paths {
		if s != nil && len(s.GRPCCodes) > 0 { // a gRPC run: its code names, as ghz reports them
			codesRow, codesOf = "codes", func(s *load.PathStats) map[string]uint64 { return s.GRPCCodes }
		}
	}
	row(codesRow, func(s *load.PathStats) string { return load.CodeList(codesOf(s)) })
	return cols, rows
}

// Console writes the console table: paths side by side, after what
// the run injected into the requests.
func Console(w io.Writer, r *load.Summary) error {
	if line := injectedLine(r); line != "" {
		fmt.Fprintln(w, line)
	}
	cols, rows := table(r)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for _, p := range cols {
		fmt.Fprint(tw, p, "\t")
	}
	fmt.Fprintln(tw)
	for _, row := range rows {
		fmt.Fprint(tw, row.Name, "\t")
		for _, c := range row.Cells {
			fmt.Fprint(tw, c, "\t")
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if line := protocolLine(r); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, ph := range r.Phases {
		fmt.Fprintf(w, "phase %-24s %8d requests  achieved %.1f/s\n", ph.Spec, ph.Requests, ph.Rate)
	}
	if r.Shard != "" {
		fmt.Fprintf(w, "shard %s (merge the shards' --results with idemcheck load report)\n", r.Shard)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Ratios)) {
		fmt.Fprintf(w, "ratio %-24s %.3f\n", k, r.Ratios[k])
	}
	if r.ObservedHitRatio > 0 {
		fmt.Fprintf(w, "observed hit ratio %.3f\n", r.ObservedHitRatio)
	}
	fmt.Fprintln(w, oracleLine(r))
	if r.UncheckedHits > 0 {
		fmt.Fprintf(w, "unchecked hits (no warm-up response for the key): %d\n", r.UncheckedHits)
	}
	if r.TTLS > 0 {
		fmt.Fprintf(w, "key TTL %gs − margin %gs: %d answers differed after their key may have expired (legal fresh executions, not judged)\n", r.TTLS, r.MarginS, r.AfterTTL)
	}
	fmt.Fprintf(w, "violations: %s\n", judgedLine(r))
	for _, v := range r.ViolationList {
		if v.Key != "" {
			fmt.Fprintf(w, "  %s key=%s: %s\n", v.Kind, v.Key, v.Detail)
		} else {
			fmt.Fprintf(w, "  %s: %s\n", v.Kind, v.Detail)
		}
	}
	if msg := r.DelayWarning(); msg != "" {
		fmt.Fprintln(w, msg)
	}
	for _, t := range r.Thresholds {
		verdict := "ok"
		if !t.OK {
			verdict = "BREACHED"
		}
		fmt.Fprintf(w, "threshold %-28s %-9s value %s\n", t.Expr, verdict, t.Value)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "FAILED path %s: %s\n", f.Path, f.Reason)
	}
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: partial report; requests cut short are not judged")
	}
	return nil
}

// protocolLine says what the requests were sent in and where their
// latencies start ("" in merged reports, which do not know).
func protocolLine(r *load.Summary) string {
	if r.Protocol == "" {
		return ""
	}
	from := "each request's send"
	if r.LatencyFrom == load.LatencyFromIntended {
		from = "each call's intended send time in the rate plan (open model)"
	}
	return fmt.Sprintf("protocol %s, latency timed from %s", r.Protocol, from)
}

// oracleLine says what the effects oracle established.
func oracleLine(r *load.Summary) string {
	switch {
	case r.Oracle == nil:
		return "oracle: not run (merged results carry no oracle counts)"
	case !r.Oracle.Available && r.Oracle.Note != "":
		return "oracle: not used — " + r.Oracle.Note + "; replay equality checked"
	case !r.Oracle.Available:
		return "oracle: none declared — execution counts unverified; replay equality checked"
	}
	var line string
	if !r.Oracle.Totals {
		line = fmt.Sprintf("oracle: no total count, %d keys probed", r.Oracle.KeysProbed)
	} else {
		most := fmt.Sprint(r.Oracle.ExpectedMax)
		if r.Oracle.Unbounded() {
			most = "any (keys outlived their TTL)"
		}
		line = fmt.Sprintf("oracle: %d executions in the window (explained: %d..%s), %d keys probed",
			r.Oracle.After-r.Oracle.Before, r.Oracle.ExpectedMin, most, r.Oracle.KeysProbed)
	}
	if r.Oracle.Error != "" {
		line += " — error: " + r.Oracle.Error
	}
	if r.Oracle.Note != "" {
		line += " — note: " + r.Oracle.Note
	}
	return line
}

func fmtMs(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2fs", v/1000)
	case v >= 1:
		return fmt.Sprintf("%.2fms", v)
	default:
		return fmt.Sprintf("%.0fµs", v*1000)
	}
}

// judgedLine is the headline of the checks: "0 violations of 3600 answers
// judged; 14418 not judged: 14418 sent after its key may have expired
// (TTL 2s − margin 500ms; ...)".
func judgedLine(r *load.Summary) string {
	if r.Judged == 0 && r.NotJudgedCount() == 0 {
		return fmt.Sprintf("%d (no keyed answer to judge)", r.Violations)
	}
	line := fmt.Sprintf("%d violations of %d answers judged", r.Violations, r.Judged)
	if n := r.NotJudgedCount(); n > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.NotJudged)) {
			part := fmt.Sprintf("%d %s", r.NotJudged[k], k)
			if k == load.NotJudgedExpired {
				ttl := time.Duration(r.TTLS * float64(time.Second))
				margin := time.Duration(r.MarginS * float64(time.Second))
				part += fmt.Sprintf(" (TTL %s − margin %s; a target TTL ≥ the run's %s, --ttl to match, judges them)",
					ttl, margin, time.Duration(r.DurationS*float64(time.Second)).Round(time.Second))
			}
			parts = append(parts, part)
		}
		line += fmt.Sprintf("; %d not judged: %s", n, strings.Join(parts, ", "))
	}
	return line
}

// payers says which of a mode's paths execute the handler (and so pay
// an injected delay) and which replay.
var payers = map[load.Path]string{
	load.Miss:       "the misses pay it",
	load.Contention: "each contention key's one execution pays it",
	load.NoKey:      "every request without a key pays it",
	load.Hit:        "the hits (replays) do not",
}

// injectedLine says what the run injected in one line, and which paths
// pay the delay it asks of each execution ("" when nothing was).
func injectedLine(r *load.Summary) string {
	in := r.Injected
	if in == nil {
		return ""
	}
	var what []string
	if p := compactJSON(in.Patch); in.Variant != "" && p != "" && p != "{}" && p != "null" {
		what = append(what, fmt.Sprintf("variant %s (patch %s)", in.Variant, p))
	}
	if in.BodyPatch != nil {
		what = append(what, "--body-patch "+compactJSON(in.BodyPatch))
	}
	line := fmt.Sprintf("injected: every request's body is operation %s's with %s merged in", in.Operation, strings.Join(what, " and "))
	if len(what) == 0 {
		// A variant without a body patch (a duration alone, patch: {},
		// or the double's delay) sends the body as declared.
		line = fmt.Sprintf("injected: every request is operation %s's variant %s, its body as declared (the variant patches nothing)", in.Operation, in.Variant)
	}
	if in.ExecutionDelayMs > 0 {
		line += fmt.Sprintf(", which asks each execution for %s more (%s)", time.Duration(in.ExecutionDelayMs*float64(time.Millisecond)), in.DelayBasis)
		var who []string
		for _, p := range []load.Path{load.Miss, load.Contention, load.NoKey, load.Hit} { // those who pay first
			if slices.Contains(r.Mode.Produces(), p) {
				who = append(who, payers[p])
			}
		}
		if len(who) > 0 {
			line += ": " + strings.Join(who, ", ")
		}
	}
	return line
}

// compactJSON is raw without insignificant spaces (as given when invalid).
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

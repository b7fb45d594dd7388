package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/idemcheck/idemcheck/internal/browsertest"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// screenshotDir is the repository's ignored output folder.
const screenshotDir = "../../out"

// TestHTMLReportsInBrowser opens the HTML reports of `run --html`,
// `load --html` and `chaos --html` in headless Chromium, as a reader
// would: the page renders, its counts equal the JSON report's, filters and
// expanding work, the load plot draws every path, and the chaos page shows
// every violation on its timeline and in its key's drill-down.
func TestHTMLReportsInBrowser(t *testing.T) {
	ctx := browsertest.New(t)
	dir := t.TempDir()

	t.Run("run", func(t *testing.T) {
		defective := demotest.Serve(t, demo.Options{TTL: 2 * time.Second, Defects: []string{"no-fingerprint"}})
		page, jsonPath := filepath.Join(dir, "run.html"), filepath.Join(dir, "run.json")
		res := runCLI(t, "run", "--target", defective, "--ttl", "2s", "--html", page, "--json", jsonPath)
		if res.code != exitFail {
			t.Fatalf("run against no-fingerprint: exit %d, want 1\n%s", res.code, res.stderr)
		}
		doc := readJSON(t, jsonPath)
		if err := chromedp.Do(ctx, chromedp.Navigate(browsertest.FileURL(t, page)), chromedp.WaitVisible(chromedp.CSS("#coverage"))); err != nil {
			t.Fatal(err)
		}
		eval := func(js string) map[string]float64 {
			t.Helper()
			v, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](js))
			if err != nil {
				t.Fatalf("%s: %v", js, err)
			}
			return v
		}
		// The page's counts, instances and requirements per level, are the JSON report's.
		counts := eval(`Object.fromEntries([...document.querySelectorAll('[data-count]')].map(e => [e.dataset.count, +e.textContent]))`)
		for k, want := range doc["counts"].(map[string]any) {
			if counts[k] != want.(float64) {
				t.Errorf("count %s: page %v, JSON %v", k, counts[k], want)
			}
		}
		reqs := eval(`Object.fromEntries([...document.querySelectorAll('[data-req]')].map(e => [e.dataset.req, +e.textContent]))`)
		for level, c := range doc["requirements"].(map[string]any) {
			if level != "MUST" && level != "SHOULD" {
				continue
			}
			for k, want := range c.(map[string]any) {
				if got := reqs[level+"."+k]; got != want.(float64) {
					t.Errorf("requirements %s.%s: page %v, JSON %v", level, k, got, want)
				}
			}
		}
		if len(reqs) != 10 {
			t.Errorf("requirement cells: %v, want MUST and SHOULD x 5", reqs)
		}
		total := len(doc["results"].([]any))
		state := eval(`({rows: document.querySelectorAll('details.result').length,
			failed: document.querySelectorAll('details.result[data-status="fail"]').length,
			outcome: document.querySelector('[data-outcome]').dataset.outcome === 'fail' ? 1 : 0})`)
		if int(state["rows"]) != total || int(state["failed"]) != int(counts["failed"]) || state["outcome"] != 1 {
			t.Errorf("page %v: want %d instances, %v failed, outcome fail", state, total, counts["failed"])
		}

		// Every instance that did not pass says why in view, without
		// expanding it: a skip its reason, as the JSON has it.
		reasons := map[string]string{}
		for _, r := range doc["results"].([]any) {
			m := r.(map[string]any)
			if m["status"] == "skip" {
				name := m["id"].(string) + "@" + m["operation"].(string)
				reasons[name], _ = m["reason"].(string)
			}
		}
		why, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries(
			[...document.querySelectorAll('details.result:not([data-status="pass"])')].map(d => {
				const w = d.querySelector('summary .why');
				return [d.dataset.name, !d.open && w && w.offsetParent !== null && w.getBoundingClientRect().height > 0 ? w.textContent : ''];
			}))`))
		if err != nil {
			t.Fatal(err)
		}
		if len(reasons) == 0 || len(why) < len(reasons) {
			t.Fatalf("want skipped instances against a bare --target: %d skips, %d rows not passing", len(reasons), len(why))
		}
		for name, text := range why {
			if text == "" {
				t.Errorf("%s: no reason in view on its closed row", name)
			}
			if want, skipped := reasons[name]; skipped && text != strings.Join(strings.Fields(want), " ") {
				t.Errorf("%s: row says %q, the JSON's reason is %q", name, text, want)
			}
		}
		groups, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#skip-groups")))
		if err != nil {
			t.Fatal(err)
		}
		for name := range reasons {
			id, _, _ := strings.Cut(name, "@")
			if !strings.Contains(groups, id) && !groupCut(groups, reasons[name]) {
				t.Errorf("skipped %s is not in the skips grouped by reason:\n%s", id, groups)
			}
		}

		// Filtering out passes leaves the others shown.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`input[data-filter="pass"]`))); err != nil {
			t.Fatal(err)
		}
		shown, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](
			`({visible: [...document.querySelectorAll('details.result')].filter(d => d.offsetParent !== null).length})`))
		if err != nil {
			t.Fatal(err)
		}
		if want := total - int(counts["passed"]); int(shown["visible"]) != want {
			t.Errorf("with passes filtered out %v instances are visible, want %d", shown["visible"], want)
		}

		// Expanding a failure shows its curl reproduction.
		sel := `details.result[data-status="fail"]`
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel+` > summary`)),
			chromedp.WaitVisible(chromedp.CSS(sel+` .curl-cmd`))); err != nil {
			t.Fatal(err)
		}
		curl, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel+` .curl-cmd`)))
		if err != nil {
			t.Fatal(err)
		}
		name, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+sel+`').dataset.name`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(curl, "curl -i -X POST '"+defective) || !strings.HasPrefix(name, "mismatch/changed-body@") {
			t.Errorf("expanded failure %s shows %q, want a curl to %s", name, curl, defective)
		}
		browsertest.Screenshot(t, ctx, filepath.Join(screenshotDir, "run-report.png"))
		browsertest.ScreenshotOf(t, ctx, filepath.Join(screenshotDir, "run-report-failure.png"), sel)
	})

	t.Run("load", func(t *testing.T) {
		target := demotest.Serve(t, demo.Options{})
		page, jsonPath := filepath.Join(dir, "load.html"), filepath.Join(dir, "load.json")
		res := runCLI(t, "load", "--target", target, "--mode", "mix", "--rate", "200", "--duration", "2s",
			"--body-patch", `{"delay_ms":5}`, "--threshold", "violations==0", "--threshold", "miss.p50<1us",
			"--html", page, "--json", jsonPath)
		if res.code != exitThreshold {
			t.Fatalf("load with a breached threshold: exit %d, want 3\n%s", res.code, res.stderr)
		}
		doc := readJSON(t, jsonPath)
		if err := chromedp.Do(ctx, chromedp.Navigate(browsertest.FileURL(t, page)), chromedp.WaitVisible(chromedp.CSS("svg.timeplot"))); err != nil {
			t.Fatal(err)
		}
		// Every measured path is its own visible line in the time plot.
		lines, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`Object.fromEntries(
			[...document.querySelectorAll('svg.timeplot polyline[data-stat="p50"]')].map(l =>
				[l.dataset.path, l.getBBox().width > 100 && getComputedStyle(l).stroke !== 'none' ? +l.dataset.points : 0]))`))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"hit", "miss"} {
			if lines[p] < 2 {
				t.Errorf("time plot: %s drawn with %v points (want a visible line): %v", p, lines[p], lines)
			}
		}
		// The percentile table shows the paths side by side.
		table, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll('table.percentiles th[data-col]')].map(e => e.dataset.col).concat(
			 [...document.querySelectorAll('table.percentiles tr[data-row]')].map(e => e.dataset.row))`))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"hit", "miss", "p50", "p99", "p99.9"} {
			if !strings.Contains(" "+strings.Join(table, " ")+" ", " "+want+" ") {
				t.Errorf("percentile table lacks %q: %v", want, table)
			}
		}
		// Thresholds with their verdicts and the violations are the JSON's.
		verdicts, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries(
			[...document.querySelectorAll('tr[data-threshold]')].map(r => [r.dataset.threshold, r.querySelector('.verdict-cell').textContent.trim()])
			.concat([['violations', document.querySelector('[data-violations]').dataset.violations]]))`))
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range doc["thresholds"].([]any) {
			m := th.(map[string]any)
			want := "breach"
			if m["ok"].(bool) {
				want = "pass"
			}
			if got := verdicts[m["expr"].(string)]; got != want {
				t.Errorf("threshold %s: page says %q, JSON ok=%v", m["expr"], got, m["ok"])
			}
		}
		if verdicts["violations"] != "0" || doc["violations"].(float64) != 0 {
			t.Errorf("violations: page %q, JSON %v", verdicts["violations"], doc["violations"])
		}
		// The page says the misses' 5 ms are the run's --body-patch.
		injected, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("p.injected")))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(injected, `--body-patch {"delay_ms":5}`) || !strings.Contains(injected, "asks each execution for 5ms more") ||
			doc["injected"].(map[string]any)["execution_delay_ms"] != 5.0 {
			t.Errorf("the page says %q, the JSON %v: want the 5ms body patch the misses pay", injected, doc["injected"])
		}
		browsertest.Screenshot(t, ctx, filepath.Join(screenshotDir, "load-report.png"))
	})

	t.Run("chaos", func(t *testing.T) {
		defective := demotest.Serve(t, demo.Options{Defects: []string{"no-inflight-lock"}})
		page, jsonPath := filepath.Join(dir, "chaos.html"), filepath.Join(dir, "chaos.json")
		res := runCLI(t, "chaos", "--target", defective, "--ops", "300", "--concurrency", "12", "--seed", "3",
			"--fault", "drop-response:0.3", "--fault", "duplicate:0.1", "--html", page, "--json", jsonPath)
		if res.code != exitFail {
			t.Fatalf("chaos against no-inflight-lock: exit %d, want 1\n%s%s", res.code, res.stdout, res.stderr)
		}
		doc := readJSON(t, jsonPath)
		if _, kept := doc["history"]; kept {
			t.Errorf("the JSON names the temporary history --html drew from: %v", doc["history"])
		}
		violations := doc["violations"].([]any)
		if len(violations) == 0 {
			t.Fatal("no violation to render")
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(browsertest.FileURL(t, page)), chromedp.WaitVisible(chromedp.CSS("svg.timeline"))); err != nil {
			t.Fatal(err)
		}
		type keyView struct {
			Class    string  `json:"class"`
			Attempts int     `json:"attempts"`
			Visible  bool    `json:"visible"`
			Tick     float64 `json:"tick"`
		}
		type chaosPage struct {
			Violations int                `json:"violations"`
			Attempts   int                `json:"attempts"`
			Faults     int                `json:"faults"`
			Shown      int                `json:"shown"`
			Keys       map[string]keyView `json:"keys"`
		}
		page1, err := chromedp.Run(ctx, chromedp.Evaluate[chaosPage](`({
			violations: +document.querySelector('[data-violations]').dataset.violations,
			attempts: [...document.querySelectorAll('g.slice')].reduce((n, g) => n + +g.dataset.attempts, 0),
			faults: [...document.querySelectorAll('g.slice')].reduce((n, g) => n + +g.dataset.faults, 0),
			shown: +document.querySelector('[data-keys-shown]').dataset.keysShown,
			keys: Object.fromEntries([...document.querySelectorAll('details.key')].map(d => {
				const rows = d.querySelectorAll('tr.attempt');
				const tick = document.querySelector('line.tick[data-key="' + d.dataset.key + '"]');
				return [d.dataset.key, {class: d.dataset.class, attempts: rows.length,
					visible: rows.length > 0 && rows[0].offsetParent !== null,
					tick: tick && getComputedStyle(tick).stroke !== 'none' ? tick.getBoundingClientRect().height : 0}];
			})),
		})`))
		if err != nil {
			t.Fatal(err)
		}
		faults := 0
		for _, n := range doc["faults"].(map[string]any) {
			faults += int(n.(float64))
		}
		if page1.Violations != len(violations) || page1.Attempts != int(doc["attempts"].(float64)) || page1.Faults != faults {
			t.Errorf("page: %d violations, %d attempts, %d faults on the timeline; JSON: %d, %v, %d",
				page1.Violations, page1.Attempts, page1.Faults, len(violations), doc["attempts"], faults)
		}
		if page1.Shown != len(page1.Keys) || page1.Shown == 0 {
			t.Errorf("the page says %d keys shown and has %d", page1.Shown, len(page1.Keys))
		}
		// Every violation is in view: open in its key's drill-down with
		// its attempts, and a visible tick on the timeline.
		for i, v := range violations {
			key := v.(map[string]any)["key"].(string)
			k, ok := page1.Keys[key]
			if !ok || k.Class != "violation" || k.Attempts == 0 || k.Tick <= 0 || (i < 10 && !k.Visible) {
				t.Errorf("violation %s on the page: %+v (present %v), want its attempts shown and a tick", key, k, ok)
			}
		}
		for key, k := range page1.Keys {
			if k.Attempts == 0 {
				t.Errorf("key %s has no attempt in its drill-down", key)
			}
		}
		browsertest.Screenshot(t, ctx, filepath.Join(screenshotDir, "chaos-report.png"))
	})
}

// groupCut reports that the skip group of reason lists only its first
// cases ("… and 3 more"): a case left out of its names is still in it.
func groupCut(groups, reason string) bool {
	reason = strings.Join(strings.Fields(reason), " ")
	for _, line := range strings.Split(groups, "\n") {
		if strings.Contains(line, reason) && strings.Contains(line, " more") {
			return true
		}
	}
	return false
}

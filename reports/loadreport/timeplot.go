package loadreport

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/load"
)

// bucket is one time slice of a series: when, its median and p99.
type bucket struct{ t, p50, p99 float64 }

// buckets slices a series into at most n time buckets from start (s) over
// span (s) and returns the non-empty ones; a path with few points gets
// fewer, fuller buckets so its line joins points rather than isolating
// them.
func buckets(s *load.TimeSeries, start int64, span float64, n int) []bucket {
	n = max(1, min(n, len(s.At)/4))
	groups := make([][]float64, n)
	for i, at := range s.At {
		x := float64(at-start) / 1e9
		k := min(n-1, max(0, int(x/span*float64(n))))
		groups[k] = append(groups[k], float64(s.LatencyMs[i]))
	}
	var out []bucket
	for k, g := range groups {
		if len(g) == 0 {
			continue
		}
		slices.Sort(g)
		q := func(f float64) float64 { return g[min(len(g)-1, int(f*float64(len(g))))] }
		out = append(out, bucket{t: (float64(k) + 0.5) * span / float64(n), p50: q(0.5), p99: q(0.99)})
	}
	return out
}

// writeSVG draws every path as its own series: a solid line of the
// median per time bucket and a dashed line of its p99, on a log latency
// axis so a 50 µs replay and a 50 ms execution are both visible.
func timePlotSVG(w io.Writer, p *load.TimePlot, title string) error {
	const (
		width, height = 900.0, 420.0
		left, right   = 70.0, 170.0
		top, bottom   = 36.0, 46.0
		nBuckets      = 120
	)
	var start, end int64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range p.Paths {
		for i, at := range s.At {
			if start == 0 || at < start {
				start = at
			}
			end = max(end, at)
			if v := math.Max(float64(s.LatencyMs[i]), 0.001); v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	span := math.Max(float64(end-start)/1e9, 0.001)
	if math.IsInf(lo, 0) {
		lo, hi = 0.01, 1
	}
	dLo, dHi := decades(lo, hi)
	plotW, plotH := width-left-right, height-top-bottom
	px := func(x float64) float64 { return left + x/span*plotW }
	py := func(ms float64) float64 {
		v := (math.Log10(math.Max(ms, 0.001)) - dLo) / (dHi - dLo)
		return top + plotH - math.Max(0, math.Min(1, v))*plotH
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeplot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	backdrop(&b, left, title)
	decadeGrid(&b, left, plotW, dLo, dHi, py)
	for i := 0; i <= 5; i++ {
		x := span * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", px(x), top, px(x), top+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.1fs</text>`+"\n", px(x), top+plotH+18, x)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">time since the first measured request (latency: log scale)</text>`+"\n", left+plotW/2, height-6)
	row := 0
	for _, path := range load.Paths {
		s := p.Paths[path]
		if s == nil || len(s.At) == 0 {
			continue
		}
		c := pathColour[path]
		bs := buckets(s, start, span, nBuckets)
		line := func(stat string, get func(bucket) float64, style string) {
			pts := make([]string, len(bs))
			for i, bk := range bs {
				pts[i] = fmt.Sprintf("%.1f,%.1f", px(bk.t), py(get(bk)))
			}
			fmt.Fprintf(&b, `<polyline data-path="%s" data-stat="%s" data-points="%d" fill="none" stroke="%s" %s points="%s"/>`+"\n",
				path, stat, len(bs), c, style, strings.Join(pts, " "))
		}
		line("p99", func(bk bucket) float64 { return bk.p99 }, `stroke-width="1.2" stroke-dasharray="4 3" stroke-opacity="0.8"`)
		line("p50", func(bk bucket) float64 { return bk.p50 }, `stroke-width="2.2"`)
		for _, bk := range bs {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>`, px(bk.t), py(bk.p50), c)
		}
		b.WriteString("\n")
		ly := top + 10 + float64(row)*34
		fmt.Fprintf(&b, `<g class="legend" data-path="%s"><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`,
			path, left+plotW+12, ly, left+plotW+32, ly, c)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s (%d)</text>`, left+plotW+38, ly+4, path, s.Seen)
		if s.Errors > 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#cf222e">%d errors</text>`, left+plotW+38, ly+18, s.Errors)
		}
		b.WriteString("</g>\n")
		row++
	}
	ly := top + 10 + float64(row)*34
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#555">solid: median per slice</text>`+"\n", left+plotW+12, ly+4)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#555">dashed: p99 per slice</text>`+"\n", left+plotW+12, ly+20)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

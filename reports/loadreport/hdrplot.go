package loadreport

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/idemcheck/idemcheck/load"
)

// colours per path in the HDR plot.
var pathColour = map[load.Path]string{load.Hit: "#1b9e77", load.Miss: "#d95f02", load.Contention: "#7570b3", load.NoKey: "#666666"}

// HDRPlot writes a self-contained SVG of the latency percentile
// spectrum per path (HdrHistogram style: the x axis stretches the tail,
// 90% 99% 99.9% ... equally spaced), one line per path. The y axis is
// logarithmic, a decade per grid line: on a linear one a miss tail of
// seconds flattens a hit curve of tenths of a millisecond into the floor.
func HDRPlot(w io.Writer, r *load.Summary) error {
	const (
		width, height = 820.0, 460.0
		left, right   = 70.0, 140.0
		top, bottom   = 40.0, 50.0
		nines         = 5.0 // up to 99.999%
		steps         = 100
	)
	type series struct {
		path load.Path
		pts  [][2]float64 // x in nines, y in ms
	}
	var all []series
	maxY, minY := 0.0, math.Inf(1)
	for _, p := range load.Paths {
		s := r.Paths[p]
		if s == nil || s.Requests == 0 {
			continue
		}
		if _, ok := s.LatencyAt(0); !ok {
			continue
		}
		ser := series{path: p}
		for i := 0; i <= steps; i++ {
			x := nines * float64(i) / steps
			q := 100 * (1 - math.Pow(10, -x))
			y, _ := s.LatencyAt(q)
			ser.pts = append(ser.pts, [2]float64{x, y})
			maxY = math.Max(maxY, y)
			if y > 0 {
				minY = math.Min(minY, y)
			}
		}
		all = append(all, ser)
	}
	if maxY == 0 {
		maxY, minY = 1, 1
	}
	lo, hi := decades(minY, maxY)
	plotW, plotH := width-left-right, height-top-bottom
	px := func(x float64) float64 { return left + x/nines*plotW }
	py := func(y float64) float64 {
		// A zero reading (below the histogram's resolution) sits on the floor.
		l := lo
		if y > 0 {
			l = math.Max(math.Log10(y), lo)
		}
		return top + plotH - (l-lo)/(hi-lo)*plotH
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	backdrop(&b, left, "Latency by percentile (HDR) — "+r.Target)
	for i := 0; i <= int(nines); i++ {
		x := px(float64(i))
		label := "0%"
		if i > 0 {
			label = strings.TrimSuffix(fmt.Sprintf("%.*f", max(i-2, 0), 100*(1-math.Pow(10, -float64(i)))), ".") + "%"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, top, x, top+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, top+plotH+18, label)
	}
	decadeGrid(&b, left, plotW, lo, hi, py)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">percentile</text>`+"\n", left+plotW/2, height-8)
	fmt.Fprintf(&b, `<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">latency (log scale)</text>`+"\n", top+plotH/2, top+plotH/2)
	for i, s := range all {
		var pts []string
		for _, p := range s.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		c := pathColour[s.path]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		ly := top + 10 + float64(i)*20
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", left+plotW+12, ly, left+plotW+32, ly, c)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s p50 %s</text>`+"\n", left+plotW+38, ly+4, s.path, fmtMs(r.Paths[s.path].LatencyMs.P50))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

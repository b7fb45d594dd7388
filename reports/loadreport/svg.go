package loadreport

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The two latency plots (HDRPlot, the time plot of the page) share a
// log latency axis and their frame.

// decades are the whole decades of a log axis around lo..hi (both above
// zero), at least one.
func decades(lo, hi float64) (float64, float64) {
	dLo, dHi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dHi <= dLo {
		dHi = dLo + 1
	}
	return dLo, dHi
}

// backdrop writes a plot's white ground and its title (escaped) at x
// left.
func backdrop(b *strings.Builder, left float64, title string) {
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%.0f" y="22" font-size="15">%s</text>`+"\n", left, html.EscapeString(title))
}

// decadeGrid writes a grid line across the plot (from left, plotW wide)
// and its latency label at every decade from lo to hi; py places a
// latency in ms.
func decadeGrid(b *strings.Builder, left, plotW, lo, hi float64, py func(float64) float64) {
	for d := lo; d <= hi; d++ {
		y := py(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+plotW, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, fmtMs(math.Pow(10, d)))
	}
}

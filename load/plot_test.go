package load

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestHDRPlotLogAxis: a hit path of ~0.3 ms beside a miss tail of ~2 s
// keeps its curve off the floor. On the linear axis it was drawn within
// 0.015% of the plot's height of zero, indistinguishable from it.
func TestHDRPlotLogAxis(t *testing.T) {
	r := &Report{Target: "http://127.0.0.1:1", Paths: map[Path]*PathStats{}}
	for path, us := range map[Path]int64{Hit: 300, Miss: 2_000_000} {
		m := newPathMetrics()
		for i := int64(0); i < 1000; i++ {
			if err := m.hist.RecordValue(us + i%10); err != nil {
				t.Fatal(err)
			}
			m.requests++
		}
		r.Paths[path] = m.stats()
	}
	var svg strings.Builder
	if err := r.WriteHDRPlot(&svg); err != nil {
		t.Fatal(err)
	}
	out := svg.String()
	if !strings.Contains(out, "latency (log scale)") {
		t.Error("the y axis does not say it is logarithmic")
	}
	// The hit line's points (first polyline: Paths order puts hit first).
	m := regexp.MustCompile(`<polyline fill="none" stroke="` + pathColour[Hit] + `" stroke-width="2" points="([^"]+)"`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no hit line in the plot:\n%s", out)
	}
	const top, plotH = 40.0, 460.0 - 40 - 50
	floor := top + plotH
	for _, pt := range strings.Fields(m[1]) {
		y, err := strconv.ParseFloat(pt[strings.Index(pt, ",")+1:], 64)
		if err != nil {
			t.Fatal(err)
		}
		if h := (floor - y) / plotH; h < 0.05 {
			t.Fatalf("hit point %s sits at %.3f of the plot's height: flattened onto the floor", pt, h)
		}
	}
}

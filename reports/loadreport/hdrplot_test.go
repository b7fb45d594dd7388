package loadreport

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/load"
)

// TestHDRPlotLogAxis: a hit path of ~0.3 ms beside a miss tail of ~2 s
// keeps its curve off the floor. On the linear axis it was drawn within
// 0.015% of the plot's height of zero, indistinguishable from it.
func TestHDRPlotLogAxis(t *testing.T) {
	// The histograms come from results as a run records them.
	results := filepath.Join(t.TempDir(), "r.bin")
	f, err := os.Create(results)
	if err != nil {
		t.Fatal(err)
	}
	enc := vegeta.NewEncoder(f)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for path, us := range map[load.Path]int64{load.Hit: 300, load.Miss: 2_000_000} {
		for i := int64(0); i < 1000; i++ {
			r := result(path, t0, time.Duration(i)*time.Millisecond, time.Duration(us+i%10)*time.Microsecond)
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := load.ReadResults([]string{results}, time.Second, 0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	r.Target = "http://127.0.0.1:1"
	var svg strings.Builder
	if err := HDRPlot(&svg, r); err != nil {
		t.Fatal(err)
	}
	out := svg.String()
	if !strings.Contains(out, "latency (log scale)") {
		t.Error("the y axis does not say it is logarithmic")
	}
	// The hit line's points (first polyline: Paths order puts hit first).
	m := regexp.MustCompile(`<polyline fill="none" stroke="` + pathColour[load.Hit] + `" stroke-width="2" points="([^"]+)"`).FindStringSubmatch(out)
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

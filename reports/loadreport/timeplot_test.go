package loadreport

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/load"
)

// warmup is the path of the pool's creation, never measured.
const warmup load.Path = "warmup"

// result is a measured result of path p at t0+at with latency lat.
func result(p load.Path, t0 time.Time, at, lat time.Duration) *vegeta.Result {
	return &vegeta.Result{URL: "http://127.0.0.1:1/v1/charges#path=" + string(p) + "&key=k", Timestamp: t0.Add(at), Latency: lat, Code: 201}
}

// TestTimePlotDrawsEveryPath: in a 90/10 mix the miss results are never
// adjacent in time to each other; every path must still be drawn as its
// own line with several points (vegeta's plot drew none for miss).
func TestTimePlotDrawsEveryPath(t *testing.T) {
	p := load.NewTimePlot()
	t0 := time.Now()
	for i := range 2000 {
		path, lat := load.Hit, 200*time.Microsecond
		switch {
		case i%10 == 0:
			path, lat = load.Miss, 50*time.Millisecond
		case i%97 == 0:
			path, lat = load.Contention, 5*time.Millisecond
		}
		p.Add(result(path, t0, time.Duration(i)*time.Millisecond, lat))
	}
	p.Add(result(warmup, t0, 0, time.Second)) // never measured: not drawn
	var b bytes.Buffer
	if err := timePlotSVG(&b, p, "t"); err != nil {
		t.Fatal(err)
	}
	lines := regexp.MustCompile(`data-path="(\w+)" data-stat="p50" data-points="(\d+)"`).FindAllStringSubmatch(b.String(), -1)
	got := map[string]int{}
	for _, m := range lines {
		got[m[1]], _ = strconv.Atoi(m[2])
	}
	for _, c := range []struct {
		path load.Path
		min  int
		why  string
	}{
		{load.Hit, 100, "1,780 results: a point per time slice"},
		{load.Miss, 40, "200 results interleaved with hits still make a line"},
		{load.Contention, 3, "a path with 20 results gets fewer, fuller slices"},
	} {
		if got[string(c.path)] < c.min {
			t.Errorf("%s: %d points, want >= %d: %s", c.path, got[string(c.path)], c.min, c.why)
		}
	}
	if _, drawn := got[string(warmup)]; drawn || len(got) != 3 {
		t.Errorf("series drawn: %v, want hit, miss, contention", got)
	}
}

package load_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startDemo serves the reference app on 127.0.0.1 and returns its Target.
func startDemo(t *testing.T, o demo.Options) *scenarios.Target {
	t.Helper()
	app, err := demo.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(func() { srv.Close(); app.Close() })
	tg, err := scenarios.FromURL(srv.URL, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func plan(t *testing.T, s string) load.Plan {
	t.Helper()
	p, err := load.ParsePlan(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMixSlowMiss: with a 50 ms miss path, hits replay their originals,
// the oracle sees exactly one execution per miss key, and the replay path
// is reported far below the execute path.
func TestMixSlowMiss(t *testing.T) {
	tg := startDemo(t, demo.Options{})
	var results bytes.Buffer
	rep, err := load.Run(context.Background(), tg,
		load.WithMode(load.ModeMix), load.WithHitRatio(0.9), load.WithPlan(plan(t, "500@2s")),
		load.WithBodyPatch(json.RawMessage(`{"delay_ms":50}`)), load.WithResults(&results), load.WithTimePlot())
	if err != nil {
		t.Fatal(err)
	}
	hit, miss := rep.Paths[load.Hit], rep.Paths[load.Miss]
	if hit == nil || miss == nil || hit.Requests < 500 || miss.Requests < 50 {
		t.Fatalf("paths: %+v", rep.Paths)
	}
	if rep.Violations != 0 {
		t.Fatalf("violations on a correct server: %+v", rep.ViolationList)
	}
	if hit.StatusCodes["201"] != hit.Requests || miss.StatusCodes["201"] != miss.Requests {
		t.Fatalf("status codes hit %v miss %v", hit.StatusCodes, miss.StatusCodes)
	}
	if !rep.Oracle.Available || rep.Oracle.TotalsURL == "" || rep.Oracle.KeysProbed == 0 ||
		rep.Oracle.After-rep.Oracle.Before != int64(miss.Requests) {
		t.Fatalf("oracle %+v for %d misses", rep.Oracle, miss.Requests)
	}
	// The miss path sleeps 50 ms by construction; a replay never runs the
	// handler, so hit p50 below miss p50 is a correctness fact, not speed.
	if miss.LatencyMs.P50 < 50 || hit.LatencyMs.P50 >= miss.LatencyMs.P50 {
		t.Fatalf("hit p50 %.2fms, miss p50 %.2fms", hit.LatencyMs.P50, miss.LatencyMs.P50)
	}
	t.Logf("hit.p50/miss.p50 = %.3f", rep.Ratios["hit.p50/miss.p50"])

	// The results file merges back into the same figures, replay checks included.
	f := filepath.Join(t.TempDir(), "a.bin")
	if err := os.WriteFile(f, results.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	merged, err := load.ReadResults([]string{f, f}, time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Paths[load.Hit].Requests != 2*hit.Requests || merged.Violations != 0 || merged.UncheckedHits != 0 {
		t.Fatalf("merged: hit %d (want %d), violations %d, unchecked %d",
			merged.Paths[load.Hit].Requests, 2*hit.Requests, merged.Violations, merged.UncheckedHits)
	}
	var html, svg bytes.Buffer
	if err := rep.WriteHTMLPlot(&html); err != nil || !strings.Contains(html.String(), "hit") {
		t.Fatalf("html plot: %v", err)
	}
	if err := rep.WriteHDRPlot(&svg); err != nil || !strings.Contains(svg.String(), "<polyline") {
		t.Fatalf("hdr plot: %v", err)
	}
}

// TestContention: hot keys hammered while the first request of each is in
// flight get only 409s and replays of one execution.
func TestContention(t *testing.T) {
	cases := []struct {
		name       string
		defects    []string
		violations bool
		why        string
	}{
		{"correct", nil, false, "an atomic claim plus in-flight 409 allows one execution per key"},
		{"no-inflight-lock", []string{"no-inflight-lock"}, true, "retries during the first execution run the handler again"},
		{"check-then-insert", []string{"check-then-insert"}, true, "a non-atomic claim lets a same-key burst execute twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := startDemo(t, demo.Options{Defects: tc.defects})
			rep, err := load.Run(context.Background(), tg,
				load.WithMode(load.ModeContention), load.WithHotKeys(4), load.WithPlan(plan(t, "500@1500ms")),
				load.WithBodyPatch(json.RawMessage(`{"delay_ms":300}`)))
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Paths[load.Contention]
			if c == nil || c.Requests < 500 {
				t.Fatalf("contention path: %+v", c)
			}
			if !tc.violations {
				if rep.Violations != 0 {
					t.Fatalf("%s: violations %+v", tc.why, rep.ViolationList)
				}
				for code := range c.StatusCodes {
					if code != "201" && code != "409" {
						t.Fatalf("status %s in %v: want only 201 (one execution and its replays) and 409", code, c.StatusCodes)
					}
				}
				if c.StatusCodes["409"] == 0 || c.StatusCodes["201"] < 4 {
					t.Fatalf("no overlap engineered: %v", c.StatusCodes)
				}
				return
			}
			if rep.Violations == 0 {
				t.Fatalf("%s, but no violation reported (codes %v, oracle %+v)", tc.why, c.StatusCodes, rep.Oracle)
			}
			t.Logf("%d violations, e.g. %+v", rep.Violations, rep.ViolationList[0])
		})
	}
}

package load_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
	"github.com/idemcheck/idemcheck/reports/loadreport"
)

// startGRPC serves the reference gRPC payments service (with defects) on
// loopback, its executions counted by the HTTP effects oracle, and returns
// a target for carrier: "aip" CreatePayment's request_id, "aep"
// CreateRefund's idempotency_key {key, first_sent}, "metadata" the
// x-idempotency-key metadata entry.
func startGRPC(t *testing.T, carrier string, defects ...reference.Defect) (*apispec.Target, *apispec.Profile) {
	t.Helper()
	httpBase, grpcBase := demotest.ServeGRPC(t, demo.Options{}, defects...)
	cfg := demotest.GRPCConfig(httpBase, grpcBase)
	switch carrier {
	case "aep":
		cfg = strings.NewReplacer("{field: request_id}", "{field: idempotency_key, first_sent: true}",
			"/CreatePayment", "/CreateRefund", "preset: aip-155", "preset: aep-155").Replace(cfg)
	case "metadata":
		cfg = strings.NewReplacer("{field: request_id}", "{metadata: x-idempotency-key}",
			"preset: aip-155", "preset: grpc-metadata").Replace(cfg)
	}
	tg, p, err := apispec.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return tg, p
}

// TestGRPCMix: the paced client drives a gRPC target at the planned rate;
// hits replay their originals (AIP-155 request_id), the oracle counts one
// execution per miss, and the same report, results file and thresholds
// as over HTTP come out, saying the protocol and how latency was timed.
func TestGRPCMix(t *testing.T) {
	tg, p := startGRPC(t, "aip")
	var results bytes.Buffer
	rep, err := load.Run(context.Background(), tg, load.WithProfile(p),
		load.WithMode(load.ModeMix), load.WithHitRatio(0.9), load.WithPlan(plan(t, "200@2s")),
		load.WithResults(&results), load.WithTimePlot())
	if err != nil {
		t.Fatal(err)
	}
	hit, miss := rep.Paths[load.Hit], rep.Paths[load.Miss]
	// 400 planned at 200/s: the paced client makes every send the plan
	// schedules, late if it must.
	if hit == nil || miss == nil || hit.Requests+miss.Requests != 400 || miss.Requests != 40 {
		t.Fatalf("paths: %s; want the 400 the plan schedules, 40 misses (mix is exact)", pathSummary(rep))
	}
	if rep.Violations != 0 || rep.Judged != hit.Requests+miss.Requests {
		t.Fatalf("violations on the correct service: %+v (judged %d)", rep.ViolationList, rep.Judged)
	}
	if hit.StatusCodes["200"] != hit.Requests || miss.StatusCodes["200"] != miss.Requests {
		t.Fatalf("status codes: %s; want 200 (OK) only", pathSummary(rep))
	}
	// A ghz user reads code names: OK, ABORTED, not 200, 409.
	if len(hit.GRPCCodes) != 1 || hit.GRPCCodes["OK"] != hit.Requests || miss.GRPCCodes["OK"] != miss.Requests {
		t.Fatalf("gRPC codes: hit %v, miss %v; want OK only", hit.GRPCCodes, miss.GRPCCodes)
	}
	var table strings.Builder
	if err := loadreport.Console(&table, rep); err != nil || !strings.Contains(table.String(), "OK:") || strings.Contains(table.String(), "200:") {
		t.Errorf("the console table lists HTTP statuses, not gRPC codes (%v):\n%s", err, table.String())
	}
	if hit.LatencyMs.P50 <= 0 || rep.Ratios["hit.p50/miss.p50"] <= 0 {
		t.Fatalf("hit p50 %.3fms, ratios %v: want the hit path's p50 and its ratio to the miss path's", hit.LatencyMs.P50, rep.Ratios)
	}
	if !rep.Oracle.Available || !rep.Oracle.Totals || rep.Oracle.KeysProbed == 0 ||
		rep.Oracle.After-rep.Oracle.Before != int64(miss.Requests) {
		t.Fatalf("oracle %+v for %d misses: want one execution per miss", *rep.Oracle, miss.Requests)
	}
	if rep.Protocol != "gRPC" || rep.LatencyFrom != load.LatencyFromIntended || !strings.HasPrefix(rep.Target, "grpc://") {
		t.Fatalf("target %q protocol %q latency from %q: want grpc://, gRPC, intended", rep.Target, rep.Protocol, rep.LatencyFrom)
	}
	ths := []string{"hit.p50<5s", "hit.p50/miss.p50<100", "violations==0", "miss.success>=1"}
	var parsed []load.Threshold
	for _, e := range ths {
		th, err := load.ParseThreshold(e)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, th)
	}
	rep.ApplyThresholds(parsed)
	rep.CheckHealth(load.DefaultMaxErrorShare)
	if b := rep.Breached(); len(b) != 0 || len(rep.Failures) != 0 {
		t.Fatalf("breached %+v, failures %+v", b, rep.Failures)
	}
	var text, html, js bytes.Buffer
	if err := loadreport.Console(&text, rep); err != nil || !strings.Contains(text.String(), "protocol gRPC, latency timed from each call's intended send time") {
		t.Fatalf("text report (%v) lacks the protocol line:\n%s", err, text.String())
	}
	if err := loadreport.HTML(&html, rep); err != nil || !strings.Contains(html.String(), `data-protocol="gRPC"`) {
		t.Fatalf("html report (%v) lacks the protocol", err)
	}
	if err := loadreport.JSON(&js, rep); err != nil || !strings.Contains(js.String(), `"protocol": "gRPC"`) || !strings.Contains(js.String(), `"latency_from": "intended"`) {
		t.Fatalf("json report (%v) lacks protocol and latency_from", err)
	}

	// The results file merges back into the same figures, replays
	// re-checked from the gRPC answers' sums.
	f := filepath.Join(t.TempDir(), "g.bin")
	if err := os.WriteFile(f, results.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	merged, err := load.ReadResults([]string{f}, time.Second, 0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Paths[load.Hit].Requests != hit.Requests || merged.Violations != 0 || merged.UncheckedHits != 0 || merged.Judged != rep.Judged {
		t.Fatalf("merged: hit %d (want %d), violations %d, unchecked %d, judged %d (want %d)",
			merged.Paths[load.Hit].Requests, hit.Requests, merged.Violations, merged.UncheckedHits, merged.Judged, rep.Judged)
	}
}

// TestGRPCCarriers: an AEP-155 key (the message {key, first_sent}, the
// same first_sent on every replay of a pool key, or the reference refuses
// it) and a metadata key replay under load as run sends them.
func TestGRPCCarriers(t *testing.T) {
	for _, carrier := range []string{"aep", "metadata"} {
		t.Run(carrier, func(t *testing.T) {
			tg, p := startGRPC(t, carrier)
			rep, err := load.Run(context.Background(), tg, load.WithProfile(p),
				load.WithMode(load.ModeHit), load.WithPool(20), load.WithPlan(plan(t, "100@1s")))
			if err != nil {
				t.Fatal(err)
			}
			h := rep.Paths[load.Hit]
			if h == nil || h.Requests != 100 || h.StatusCodes["200"] != h.Requests {
				t.Fatalf("hits: %s; want the 100 planned, every one OK (a first_sent other than the original's is INVALID_ARGUMENT)", pathSummary(rep))
			}
			if rep.Violations != 0 || rep.Oracle.After != rep.Oracle.Before || rep.Oracle.KeysProbed != 20 {
				t.Fatalf("violations %+v, oracle %+v: replays execute nothing, each pool key once", rep.ViolationList, *rep.Oracle)
			}
		})
	}
}

// TestGRPCReplayDiffers: the replay check holds over gRPC as over HTTP.
// A service whose replays answer another message than their original
// (each replay's description respelt) gets a replay-differs violation
// under load, from the sums taken of the carrier's answers.
func TestGRPCReplayDiffers(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	respell := grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		resp, err := next(ctx, req)
		r, isCreate := req.(*paymentsv1.CreatePaymentRequest)
		p, isPayment := resp.(*paymentsv1.Payment)
		if err != nil || !isCreate || !isPayment {
			return resp, err
		}
		mu.Lock()
		calls[r.GetRequestId()]++
		n := calls[r.GetRequestId()]
		mu.Unlock()
		if n > 1 { // a replay: the same payment, spelt anew
			p = proto.CloneOf(p)
			p.Description = fmt.Sprintf("replay %d", n)
		}
		return p, nil
	})
	httpBase, g := demotest.GRPCServer(t, demo.Options{}, nil, respell)
	tg, p, err := apispec.ParseConfig([]byte(demotest.GRPCConfig(httpBase, demotest.ServeGRPCServer(t, g))))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := load.Run(context.Background(), tg, load.WithProfile(p),
		load.WithMode(load.ModeHit), load.WithPool(5), load.WithPlan(plan(t, "100@500ms")))
	if err != nil {
		t.Fatal(err)
	}
	h := rep.Paths[load.Hit]
	if h == nil || h.Requests != 50 || h.StatusCodes["200"] != h.Requests {
		t.Fatalf("hits: %s; want the 50 planned, every one OK", pathSummary(rep))
	}
	if uint64(rep.Violations) != h.Requests || rep.ViolationList[0].Kind != load.ReplayDiffers || !strings.Contains(rep.ViolationList[0].Detail, "replay ") {
		t.Fatalf("violations %d %+v; want every hit a replay-differs, quoting the respelt answer", rep.Violations, rep.ViolationList)
	}
}

// TestGRPCContention: hot keys hammered while the first call of each runs
// (the slow variant: 600 ms): the correct service answers ABORTED (409)
// and replays of one execution; with no-inflight-lock the retries execute
// again, and both the created ids and the oracle say so.
func TestGRPCContention(t *testing.T) {
	cases := []struct {
		name    string
		defects []reference.Defect
	}{
		{"correct", nil},
		{"no-inflight-lock", []reference.Defect{reference.NoInflightLock}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg, p := startGRPC(t, "aip", tc.defects...)
			rep, err := load.Run(context.Background(), tg, load.WithProfile(p),
				load.WithMode(load.ModeContention), load.WithHotKeys(4), load.WithPlan(plan(t, "200@1s")))
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Paths[load.Contention]
			if c == nil || c.Requests != 200 {
				t.Fatalf("contention path: %s; want the 200 planned", pathSummary(rep))
			}
			if rep.Injected == nil || rep.Injected.Variant != apispec.VariantSlow {
				t.Fatalf("injected %+v: contention sends the slow variant", rep.Injected)
			}
			if tc.defects == nil {
				if rep.Violations != 0 || c.StatusCodes["409"] == 0 || c.StatusCodes["200"]+c.StatusCodes["409"] != c.Requests {
					t.Fatalf("violations %+v, codes %v: want none, ABORTED (409) while each first call runs, else replays", rep.ViolationList, c.StatusCodes)
				}
				return
			}
			kinds := map[string]bool{}
			for _, v := range rep.ViolationList {
				kinds[v.Kind] = true
			}
			if rep.Violations == 0 || !kinds[load.SecondExecution] || !kinds[load.OracleKey] {
				t.Fatalf("no-inflight-lock: violations %+v (codes %v); want second-execution and oracle-key-executions", rep.ViolationList, c.StatusCodes)
			}
		})
	}
}

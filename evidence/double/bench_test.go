package double_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/evidence/double"
)

// BenchmarkDoubleCalls: calls the double serves over loopback HTTP (the
// clients in the same process) with exact per-token counts, checked at
// the end. tracked strings are tracked beside the ones called, as a run
// tracks every key it sent: tokens (the marker, found by prefix) or
// forwarded keys (found by their first bytes).
func BenchmarkDoubleCalls(b *testing.B) {
	for _, kind := range []string{"token", "key"} {
		b.Run(kind, func(b *testing.B) {
			s, err := double.Start(context.Background(), payments())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(context.Background()) //nolint:errcheck // nothing in flight
			const tracked, used = 10000, 64
			toks := make([]string, tracked)
			for i := range toks {
				toks[i] = double.NewToken()
				if kind == "key" {
					toks[i] = fmt.Sprintf("%08x-4b1e-4c2d-9e8f-%s", i, toks[i][len(double.Prefix)+4:])
				}
			}
			s.Track(toks...)
			bodies := make([]string, used)
			for i := range bodies {
				bodies[i] = fmt.Sprintf(`{"amount":1000,"card":"4242","currency":"usd","description":"order of three items","reference":%q}`, toks[i*(tracked/used)])
			}
			tr := &http.Transport{MaxIdleConnsPerHost: 256}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			var n atomic.Uint64
			var failed atomic.Int64
			url := s.URL() + "/v1/payments"
			b.SetParallelism(4)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					resp, err := c.Post(url, "application/json", strings.NewReader(bodies[i%used]))
					if err != nil {
						failed.Add(1)
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 201 {
						failed.Add(1)
					}
				}
			})
			elapsed := time.Since(start)
			b.StopTimer()
			if failed.Load() > 0 {
				b.Fatalf("%d calls failed", failed.Load())
			}
			total := 0
			for i := range used {
				total += s.Calls(toks[i*(tracked/used)], "payments")
			}
			if total != int(n.Load()) || s.Untokened("") != 0 {
				b.Fatalf("counts %d (untokened %d) for %d calls: not exact", total, s.Untokened(""), n.Load())
			}
			b.ReportMetric(float64(n.Load())/elapsed.Seconds(), "calls/s")
		})
	}
}

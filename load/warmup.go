package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/apispec"
)

// warmUp prepares what the measured window needs before it starts: open
// connections to every base, the completed pool hits replay (hit, mix)
// and the hot keys contention hammers.
func warmUp(ctx context.Context, c *config, t *apispec.Target, rq *request, client *http.Client, keys *keySource, s *sink) (pool, hot []string, err error) {
	if c.paced == nil { // one gRPC connection per server carries every call: the preflight opened them
		for _, b := range t.Bases() {
			warmConnections(ctx, client, b+"/", int(c.workers))
		}
	}
	if c.mode == ModeHit || c.mode == ModeMix {
		if pool, err = warmPool(ctx, c, rq, keys, s); err != nil {
			return nil, nil, err
		}
	}
	if c.mode == ModeContention {
		for i := 0; i < c.hot; i++ {
			k, err := keys.new()
			if err != nil {
				return nil, nil, err
			}
			hot = append(hot, k)
		}
	}
	return pool, hot, nil
}

// warmConnections opens n connections before the measured window: n
// concurrent GETs, answered with anything, leave n idle keep-alive
// connections in the pool (vegeta otherwise dials hundreds in the first
// milliseconds of a phase and those requests dominate p99).
func warmConnections(ctx context.Context, client *http.Client, u string, n int) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return
			}
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			_ = resp.Body.Close()
		}()
	}
	close(start)
	wg.Wait()
}

// warmPool completes c.pool keys before the window (not measured) and
// records their responses as the originals hits must replay.
func warmPool(ctx context.Context, c *config, rq *request, keys *keySource, s *sink) ([]string, error) {
	pool := make([]string, c.pool)
	for i := range pool {
		k, err := keys.new()
		if err != nil {
			return nil, err
		}
		pool[i] = k
	}
	var i atomic.Int64
	tr := func(t *vegeta.Target) error {
		n := i.Add(1) - 1
		if n >= int64(len(pool)) {
			return vegeta.ErrNoTargets
		}
		rq.target(t, warmup, pool[n])
		return nil
	}
	atk := c.attacker(c.workers, c.workers, vegeta.DefaultMaxBody)
	failed, first := 0, ""
	done := 0
	for r := range atk.Attack(tr, vegeta.Rate{Freq: 0}, 0, string(warmup)) {
		if ctx.Err() != nil {
			atk.Stop()
		}
		if r.URL == "" { // the targeter ran dry
			continue
		}
		done++
		s.add(r)
		if r.Code < 200 || r.Code >= 300 {
			failed++
			if first == "" {
				first = fmt.Sprintf("status %d %s %s", r.Code, r.Error, clip(r.Body))
			}
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("warm-up interrupted: %w", ctx.Err())
	}
	if failed > 0 || done != len(pool) {
		return nil, fmt.Errorf("warm-up: %d of %d pool keys did not complete with 2xx (first: %s)", failed+len(pool)-done, len(pool), first)
	}
	return pool, nil
}

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/reference/grpcref"
	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// The gRPC comparison (-grpc): `idemcheck load`'s paced client in hit mode
// against the reference gRPC service (what `idemcheck serve --grpc`
// serves), beside a bare grpc-go loop: the generated client, the same
// workers on one connection, the same pool of keys replayed. ghz, where
// the module proxy serves a build that installs, is measured beside both
// by scripts/bench-load.sh.

// grpcConfig is the reference service's CreatePayment (AIP-155's
// request_id) at base; no oracle: only the replay check runs, as over
// HTTP.
func grpcConfig(base string) string {
	return fmt.Sprintf(`base_url: %s
key: {field: request_id}
principals: [{name: alice, metadata: {authorization: Bearer alice}}]
operations:
  - name: payments
    rpc: idemcheck.reference.v1.PaymentService/CreatePayment
    body: {parent: accounts/a1, payment: {amount: 1000, currency: USD}}
    id_pointer: /name
`, base)
}

func runGRPC(dur time.Duration, rounds int, workers uint64) error {
	base, stop, err := startServer("-serve-grpc")
	if err != nil {
		return err
	}
	defer stop()
	target, _, err := apispec.ParseConfig([]byte(grpcConfig(base)))
	if err != nil {
		return err
	}
	plan, err := load.ParsePlan(fmt.Sprintf("max@%s", dur))
	if err != nil {
		return err
	}
	runRunner := func() (float64, float64, error) {
		c0 := cpu()
		rep, err := load.Run(context.Background(), target, load.WithMode(load.ModeHit), load.WithPlan(plan),
			load.WithWorkers(workers, workers), load.WithPool(hitPool))
		if err != nil {
			return 0, 0, err
		}
		if rep.Violations != 0 || rep.Paths[load.Hit] == nil || rep.Paths[load.Hit].Success < 0.99 {
			return 0, 0, fmt.Errorf("gRPC hit run: %d violations, paths %+v", rep.Violations, rep.Paths)
		}
		n := float64(rep.Paths[load.Hit].Requests)
		return rep.Phases[len(rep.Phases)-1].Rate, float64((cpu() - c0).Microseconds()) / n, nil
	}
	conn, err := grpc.NewClient(strings.TrimPrefix(base, "grpc://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := paymentsv1.NewPaymentServiceClient(conn)
	runBare := func() (float64, float64, error) {
		c0 := cpu()
		rate, n, err := bareGRPC(client, dur, int(workers))
		if err != nil {
			return 0, 0, err
		}
		return rate, float64((cpu() - c0).Microseconds()) / float64(n), nil
	}
	return compare("grpc", rounds, profiled("grpc", "bare", runBare), profiled("grpc", "runner", runRunner))
}

// bareGRPC is what a grpc-go user writes for a saturation test: workers
// goroutines calling CreatePayment back to back for dur, each reply read
// (decoded by the generated client) and its error checked, the hitPool
// keys in turn (the first round executes them, later ones replay).
func bareGRPC(client paymentsv1.PaymentServiceClient, dur time.Duration, workers int) (float64, uint64, error) {
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer bare")
	var n atomic.Uint64
	var failed atomic.Pointer[error]
	var first, last atomic.Int64
	began := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(began) < dur {
				i := n.Add(1) - 1
				sent := time.Now().UnixNano()
				first.CompareAndSwap(0, sent)
				_, err := client.CreatePayment(ctx, &paymentsv1.CreatePaymentRequest{Parent: "accounts/a1",
					Payment: &paymentsv1.Payment{Amount: 1000, Currency: "USD"}, RequestId: fmt.Sprintf("bare-%d", i%hitPool)})
				if err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				for {
					l := last.Load()
					if sent <= l || last.CompareAndSwap(l, sent) {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		return 0, 0, fmt.Errorf("bare grpc-go loop: %w", *e)
	}
	calls := n.Load()
	span := time.Duration(last.Load() - first.Load())
	if calls < 2 || span <= 0 {
		return 0, 1, nil
	}
	// The same definition as the runner's achieved rate: sends per second
	// between the first and the last.
	return float64(calls-1) / span.Seconds(), calls, nil
}

// serveGRPCRef serves the reference gRPC payments service on a memory
// store, as `idemcheck serve --grpc` does (server reflection on), and
// prints its grpc:// base; it exits when its parent kills it.
func serveGRPCRef() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	svc, err := grpcref.New(grpcref.Options{Store: memstore.New()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	g := grpc.NewServer()
	svc.Register(g)
	fmt.Println("grpc://" + ln.Addr().String())
	_ = g.Serve(ln)
}

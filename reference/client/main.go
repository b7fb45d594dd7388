package client

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure Main.
type Options struct {
	Defects []Defect
	// Timeout bounds each attempt (0: DefaultTimeout).
	Timeout time.Duration
}

// Main is the driving contract of `idemcheck client` (over HTTP, or
// over gRPC when the base URL is grpc://: CreatePayment of the reference
// PaymentService): it reads
// IDEMCHECK_BASE_URL, IDEMCHECK_CALLS, IDEMCHECK_PARALLEL and
// IDEMCHECK_TOKEN through getenv, makes IDEMCHECK_PARALLEL workers each
// make IDEMCHECK_CALLS calls one after another through one shared
// Client, prints each created id on its own line and returns 0 when
// every call succeeded (1 otherwise, 2 for a bad environment).
func Main(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer, o Options) int {
	base := getenv("IDEMCHECK_BASE_URL")
	if base == "" {
		fmt.Fprintln(stderr, "refclient: IDEMCHECK_BASE_URL is not set")
		return 2
	}
	calls, err := count(getenv, "IDEMCHECK_CALLS")
	if err != nil {
		fmt.Fprintln(stderr, "refclient:", err)
		return 2
	}
	parallel, err := count(getenv, "IDEMCHECK_PARALLEL")
	if err != nil {
		fmt.Fprintln(stderr, "refclient:", err)
		return 2
	}
	var charge func(context.Context) (string, error)
	ch := Charge{Amount: 1000, Currency: "usd", Description: "idemcheck client"}
	if strings.HasPrefix(base, "grpc://") {
		c, err := NewGRPC(base, getenv("IDEMCHECK_TOKEN"), o.Defects...)
		if err != nil {
			fmt.Fprintln(stderr, "refclient:", err)
			return 2
		}
		defer c.Close()
		if o.Timeout > 0 {
			c.Timeout = o.Timeout
		}
		charge = func(ctx context.Context) (string, error) { return c.CreatePayment(ctx, ch) }
	} else {
		c := New(base, getenv("IDEMCHECK_TOKEN"), o.Defects...)
		if o.Timeout > 0 {
			c.Timeout = o.Timeout
		}
		charge = func(ctx context.Context) (string, error) { return c.CreateCharge(ctx, ch) }
	}
	var mu sync.Mutex
	failed := false
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for range calls {
				id, err := charge(ctx)
				mu.Lock()
				if err != nil {
					failed = true
					fmt.Fprintln(stderr, "refclient:", err)
				} else {
					fmt.Fprintln(stdout, id)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed {
		return 1
	}
	return 0
}

func count(getenv func(string) string, name string) (int, error) {
	v := getenv(name)
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", name, v)
	}
	return n, nil
}

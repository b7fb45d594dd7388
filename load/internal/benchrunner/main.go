package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/wire"
)

func main() {
	dur := flag.Duration("duration", 3*time.Second, "length of each attack")
	rounds := flag.Int("rounds", 3, "alternating rounds (bare, runner)")
	workers := flag.Uint64("workers", 32, "workers = max workers for both")
	serve := flag.Bool("serve", false, "internal: be the trivial server (child process)")
	serveGRPC := flag.Bool("serve-grpc", false, "internal: be the reference gRPC server (child process)")
	grpcMode := flag.Bool("grpc", false, "compare over gRPC (the paced client against a bare grpc-go loop) instead of HTTP")
	flag.StringVar(&profileDir, "pprof", "", "write a CPU profile of each side's first measured round to DIR (bare-MODE.pprof, runner-MODE.pprof)")
	flag.Parse()
	switch {
	case *serve:
		serveTrivial()
		return
	case *serveGRPC:
		serveGRPCRef()
		return
	}
	run := runHTTP
	if *grpcMode {
		run = runGRPC
	}
	if *rounds < 1 || *rounds > 50 || *dur <= 0 || *dur > time.Minute {
		fmt.Fprintln(os.Stderr, "benchrunner: want 1..50 rounds of up to 1m")
		os.Exit(2)
	}
	if err := run(*dur, *rounds, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "benchrunner:", err)
		os.Exit(1)
	}
}

func runHTTP(dur time.Duration, rounds int, workers uint64) error {
	base, stop, err := startServer("-serve")
	if err != nil {
		return err
	}
	defer stop()
	plan, err := load.ParsePlan(fmt.Sprintf("max@%s", dur))
	if err != nil {
		return err
	}
	for _, m := range []struct {
		mode load.Mode
		path load.Path
		op   apispec.Operation
		bare func() (float64, uint64)
	}{
		// nokey: a trivial handler, bodies not read by the bare loop.
		{load.ModeNoKey, load.NoKey, apispec.Operation{Name: "trivial", Method: "POST", Path: "/",
			Headers: map[string]string{"Content-Type": "application/json"}, Body: json.RawMessage(`{"amount":1000}`)},
			func() (float64, uint64) { return bareAttack(nokeyTargets(base), dur, workers, 0) }},
		// hit: the reference server replaying a pool of keys; the bare loop
		// reads every body, the runner also checks it.
		{load.ModeHit, load.Hit, apispec.Operation{Name: "charges", Method: "POST", Path: "/v1/charges",
			Headers: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer bench"},
			Body:    json.RawMessage(hitBody)},
			func() (float64, uint64) { return bareAttack(hitTargets(base), dur, workers, -1) }},
	} {
		// Timeout as FromURL sets it: Preflight bounds its look by it.
		target := &apispec.Target{BaseURL: base, Operations: []apispec.Operation{m.op}, Timeout: 10 * time.Second}
		runRunner := func() (float64, float64, error) {
			c0 := cpu()
			rep, err := load.Run(context.Background(), target, load.WithMode(m.mode), load.WithPlan(plan),
				load.WithWorkers(workers, workers), load.WithPool(hitPool))
			if err != nil {
				return 0, 0, err
			}
			n := float64(rep.Paths[m.path].Requests)
			return rep.Phases[len(rep.Phases)-1].Rate, float64((cpu() - c0).Microseconds()) / n, nil
		}
		runBare := func() (float64, float64, error) {
			c0 := cpu()
			rate, n := m.bare()
			return rate, float64((cpu() - c0).Microseconds()) / float64(n), nil
		}
		if err := compare(string(m.mode), rounds, profiled(string(m.mode), "bare", runBare), profiled(string(m.mode), "runner", runRunner)); err != nil {
			return err
		}
	}
	return nil
}

// profileDir, when set, receives a CPU profile of each side's first
// measured round (-pprof): where the client's time goes, side by side.
var profileDir string

// profiled is run, profiled into profileDir on its second call (the
// first is compare's discarded warm-up round).
func profiled(mode, side string, run func() (float64, float64, error)) func() (float64, float64, error) {
	if profileDir == "" {
		return run
	}
	calls := 0
	return func() (float64, float64, error) {
		calls++
		if calls != 2 {
			return run()
		}
		f, err := os.Create(filepath.Join(profileDir, side+"-"+mode+".pprof"))
		if err != nil {
			return 0, 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, 0, err
		}
		defer pprof.StopCPUProfile()
		return run()
	}
}

// compare runs bare vegeta and the runner alternately and prints the
// per-round and median ratios.
func compare(mode string, rounds int, runBare, runRunner func() (float64, float64, error)) error {
	bare := "bare vegeta"
	if mode == "grpc" {
		bare = "bare grpc-go"
	}
	// One discarded round of each: first runs pay one-off costs (page
	// faults, the server's first connections) that are not the runner's.
	if _, _, err := runBare(); err != nil {
		return err
	}
	if _, _, err := runRunner(); err != nil {
		return err
	}
	var rateRatios, cpuRatios []float64
	fmt.Printf("mode %s\n%-6s %14s %14s %8s %16s %16s\n", mode, "round", bare+"/s", "idemcheck/s", "ratio", "bare cpu µs/req", "idemcheck µs/req")
	for i := 0; i < rounds; i++ {
		// Alternate who goes first so drift in machine load cancels out.
		first, second := runBare, runRunner
		if i%2 == 1 {
			first, second = runRunner, runBare
		}
		r1, c1, err := first()
		if err != nil {
			return err
		}
		r2, c2, err := second()
		if err != nil {
			return err
		}
		bRate, bCPU, rRate, rCPU := r1, c1, r2, c2
		if i%2 == 1 {
			bRate, bCPU, rRate, rCPU = r2, c2, r1, c1
		}
		rateRatios, cpuRatios = append(rateRatios, rRate/bRate), append(cpuRatios, rCPU/bCPU)
		fmt.Printf("%-6d %14.0f %14.0f %8.3f %16.1f %16.1f\n", i+1, bRate, rRate, rRate/bRate, bCPU, rCPU)
	}
	// Machine-readable lines for scripts/bench-load.sh: the per-round
	// ratios (it takes their median and spread, and holds the goals).
	fmt.Printf("RATIO %s rate%s\n", mode, roundList(rateRatios))
	fmt.Printf("RATIO %s cpu%s\n", mode, roundList(cpuRatios))
	fmt.Printf("median runner/%s ratios (per round, paired): rate %.3f, CPU per request %.3f\n", bare, median(rateRatios), median(cpuRatios))
	return nil
}

const (
	hitBody = `{"amount":1000,"currency":"usd"}`
	hitPool = 100 // keys replayed in hit mode, by the runner and the bare loop alike
)

func nokeyTargets(base string) []vegeta.Target {
	return []vegeta.Target{{Method: "POST", URL: base + "/", Body: []byte(`{"amount":1000}`),
		Header: http.Header{"Content-Type": {"application/json"}}}}
}

// hitTargets are hitPool keyed requests; the first round executes them,
// every later one replays.
func hitTargets(base string) []vegeta.Target {
	ts := make([]vegeta.Target, hitPool)
	for i := range ts {
		ts[i] = vegeta.Target{Method: "POST", URL: base + "/v1/charges", Body: []byte(hitBody),
			Header: http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer bare"},
				"Idempotency-Key": {fmt.Sprintf("bare-%d", i)}}}
	}
	return ts
}

// cpu is this process's user+system CPU time (the client side only: the
// server is a child process).
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startServer runs this binary with flag (-serve, -serve-grpc) and reads
// the address it prints.
func startServer(flag string) (string, func(), error) {
	cmd := exec.Command(os.Args[0], flag)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("server child: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

// serveTrivial answers every request with a tiny JSON body; it exits when
// its parent kills it.
func serveTrivial() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("http://" + ln.Addr().String())
	app, err := demo.New(demo.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", app) // the reference server, for hit mode
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	_ = srv.Serve(ln)
}

// bareAttack is what a vegeta library user writes: same client kind,
// same worker bounds, results into vegeta.Metrics.
func bareAttack(targets []vegeta.Target, dur time.Duration, workers uint64, maxBody int64) (float64, uint64) {
	client := &http.Client{Transport: wire.NewTransport(int(workers)), Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	atk := vegeta.NewAttacker(vegeta.Client(client), vegeta.Workers(workers), vegeta.MaxWorkers(workers), vegeta.MaxBody(maxBody))
	tr := vegeta.NewStaticTargeter(targets...)
	var m vegeta.Metrics
	var first, last time.Time
	for r := range atk.Attack(tr, vegeta.Rate{Freq: 0}, dur, "bare") {
		m.Add(r)
		if first.IsZero() || r.Timestamp.Before(first) {
			first = r.Timestamp
		}
		if r.Timestamp.After(last) {
			last = r.Timestamp
		}
	}
	m.Close()
	if m.Requests < 2 {
		return 0, 1
	}
	// The same definition as the runner's achieved rate.
	return float64(m.Requests-1) / last.Sub(first).Seconds(), m.Requests
}

func roundList(xs []float64) string {
	var b strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&b, " %.3f", x)
	}
	return b.String()
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

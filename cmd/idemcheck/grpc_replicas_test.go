package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/memstore"
	"github.com/idemcheck/idemcheck/reference/pgstore"
)

// TestRunGRPCReplicas: idemcheck run --replica grpc://B beside a gRPC
// config's base_url runs the replicas/ cases over both servers: two
// replicas of the reference gRPC service on one PostgreSQL store pass
// them, exit 0; two each on its own memory store (a store local to each
// replica) exit 1 naming replicas/burst-across.
func TestRunGRPCReplicas(t *testing.T) {
	o := demo.Options{TTL: 3 * time.Second, Lease: 3 * time.Second}
	t.Run("one postgres store", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		s, err := pgstore.Open(ctx, testenv.RequirePostgres(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		httpBase, bases := demotest.GRPCReplicas(t, o, s, s)
		res, results := runReport(t, "--config", grpcReferenceConfig(t, httpBase, bases[0]), "--replica", bases[1], "--ttl", "3s", "--run", "replicas/**")
		if res.code != exitOK || len(results) != 6 {
			t.Fatalf("exit %d, %d results; want 0 and the 6 replicas/ cases:\n%s%s", res.code, len(results), res.stdout, res.stderr)
		}
		for _, r := range results {
			if r.Status != "pass" {
				t.Errorf("%s: %s: %s %s", r.ID, r.Status, r.Observed, r.Reason)
			}
		}
	})
	t.Run("a memory store each", func(t *testing.T) {
		t.Parallel()
		a, b := memstore.New(), memstore.New()
		t.Cleanup(func() {
			_ = a.Close()
			_ = b.Close()
		})
		httpBase, bases := demotest.GRPCReplicas(t, o, []reference.Store{a, b}...)
		res, _ := runReport(t, "--config", grpcReferenceConfig(t, httpBase, bases[0]), "--replica", bases[1], "--run", "replicas/burst-across")
		if res.code != exitFail || !strings.Contains(res.stderr+res.stdout, "replicas/burst-across") {
			t.Fatalf("exit %d, want 1 naming replicas/burst-across:\n%s%s", res.code, res.stdout, res.stderr)
		}
	})
}

// TestGRPCReplicasRefused: a replica of another scheme than a gRPC
// target's base URL is refused in one line naming it, exit 2, by
// --replica and in the config, by run and by chaos. No server runs: the
// refusals come before any call.
func TestGRPCReplicasRefused(t *testing.T) {
	cfg := grpcReferenceConfig(t, "http://127.0.0.1:1", "grpc://127.0.0.1:2")
	mixed := writeTemp(t, "mixed.yaml", demotest.GRPCConfig("http://127.0.0.1:1", "grpc://127.0.0.1:2")+
		"replicas: [grpc://127.0.0.1:2, https://127.0.0.1:3]\n")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--config", cfg, "--replica", "http://127.0.0.1:3"}, `--replica: replicas[1] "http://127.0.0.1:3": want grpc://host:port like base_url`},
		{[]string{"run", "--config", cfg, "--replica", "grpcs://127.0.0.1:3"}, `--replica: replicas[1] "grpcs://127.0.0.1:3": want grpc://host:port like base_url`},
		{[]string{"run", "--config", mixed}, `replicas[1] "https://127.0.0.1:3": want grpc://host:port like base_url`},
		{[]string{"chaos", "--config", cfg, "--replica", "http://127.0.0.1:3", "--ops", "1"}, `--replica: replicas[1] "http://127.0.0.1:3": want grpc://host:port like base_url`},
	}
	for _, c := range cases {
		code, stderr := runCaptured(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", c.args, code, stderr, c.want)
		}
	}
}

package load_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// TestGRPCReplicas: load's hits over a gRPC target's replicas take them
// in turn (one connection each): two replicas on one store replay every
// pool key, wherever it was created; two each on its own store execute a
// key again on the replica that did not create it, and the oracle says so.
func TestGRPCReplicas(t *testing.T) {
	shared := memstore.New()
	a, b := memstore.New(), memstore.New()
	t.Cleanup(func() {
		for _, s := range []*memstore.Store{shared, a, b} {
			_ = s.Close()
		}
	})
	for _, tc := range []struct {
		name   string
		stores []reference.Store
		moved  bool // the oracle counts executions during the hits
	}{
		{"one store", []reference.Store{shared, shared}, false},
		{"a store each", []reference.Store{a, b}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			httpBase, bases := demotest.GRPCReplicas(t, demo.Options{TTL: time.Hour, Lease: 5 * time.Second}, tc.stores...)
			cfg := demotest.GRPCConfig(httpBase, bases[0]) + "replicas: [" + strings.Join(bases, ", ") + "]\n"
			tg, p, err := apispec.ParseConfig([]byte(cfg))
			if err != nil {
				t.Fatal(err)
			}
			// An even pool over two replicas: were hits to take the keys and
			// the replicas each in turn, every hit would meet its key on the
			// replica that created it; each round over the pool moves the
			// keys on by one replica instead.
			rep, err := load.Run(context.Background(), tg, load.WithProfile(p),
				load.WithMode(load.ModeHit), load.WithPool(20), load.WithPlan(plan(t, "100@1s")))
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Replicas) != 2 {
				t.Errorf("replicas %v, want both", rep.Replicas)
			}
			if moved := rep.Oracle.After != rep.Oracle.Before; moved != tc.moved || (rep.Violations != 0) != tc.moved {
				t.Fatalf("oracle %+v, violations %d %+v: want executions during the hits %v", *rep.Oracle, rep.Violations, rep.ViolationList, tc.moved)
			}
		})
	}
}

package scenarios

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/memstore"
	"github.com/idemcheck/idemcheck/reference/pgstore"
	"github.com/idemcheck/idemcheck/reference/redisstore"
)

// grpcReplicasTarget serves the reference gRPC service as two replicas
// on stores (demotest.GRPCReplicas) and returns grpcConfig's target of
// them (replicas: [A, B]).
func grpcReplicasTarget(t *testing.T, carrier string, stores [2]reference.Store) (*apispec.Target, *apispec.Profile) {
	t.Helper()
	httpBase, bases := demotest.GRPCReplicas(t, demo.Options{TTL: 3 * time.Second, Lease: 3 * time.Second}, stores[:]...)
	cfg := grpcConfig(httpBase, bases[0], carrier) + "replicas: [" + strings.Join(bases, ", ") + "]\n"
	tg, p, err := apispec.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return tg, p
}

// replicaIDs are the replicas/ cases.
func replicaIDs() []string {
	var ids []string
	for _, c := range Catalog() {
		if c.Family == "replicas" {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// TestGRPCReplicas: the replicas/ family over gRPC, the key in
// AIP-155's request_id, AEP-155's idempotency_key and metadata. Two
// replicas of the reference on one shared store (PostgreSQL, Redis) keep
// every promise across them; two each on its own memory store (the store
// local to one replica, invisible on one) execute a key once per replica:
// every case where replica B must know what A did fails, while a second
// principal's own execution on B is right.
func TestGRPCReplicas(t *testing.T) {
	open := map[string]func(t *testing.T) [2]reference.Store{
		"postgres": func(t *testing.T) [2]reference.Store {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			s, err := pgstore.Open(ctx, testenv.RequirePostgres(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return [2]reference.Store{s, s}
		},
		"redis": func(t *testing.T) [2]reference.Store {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			s, err := redisstore.Open(ctx, testenv.RequireRedis(t), redisstore.WithPrefix(testenv.KeyPrefix(t)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return [2]reference.Store{s, s}
		},
		"memory-each": func(t *testing.T) [2]reference.Store {
			a, b := memstore.New(), memstore.New()
			t.Cleanup(func() {
				_ = a.Close()
				_ = b.Close()
			})
			return [2]reference.Store{a, b}
		},
	}
	allPass := map[string]Status{}
	for _, id := range replicaIDs() {
		allPass[id] = Pass
	}
	// Each replica claims the key in its own store: B executes what A
	// did (twice per burst round, one per replica), and each execution is
	// deterministic, not a race. A second execution before the TTL is a
	// SHOULD's miss in ttl-other-replica (a key that expired early looks
	// the same), as over HTTP.
	localStore := map[string]Status{
		"replicas/burst-across": Fail, "replicas/in-flight-other-replica": Fail, "replicas/replay-other-replica": Fail,
		"replicas/mismatch-other-replica": Fail, "replicas/ttl-other-replica": Warn,
		"replicas/other-user-other-replica": Pass,
	}
	rows := []struct {
		store, carrier string
		want           map[string]Status
	}{
		{"postgres", "aip", allPass},
		{"postgres", "aep", allPass},
		{"postgres", "metadata", allPass},
		{"redis", "aip", allPass},
		{"memory-each", "aip", localStore},
		{"memory-each", "aep", localStore},
		{"memory-each", "metadata", localStore},
	}
	if len(allPass) != 6 || len(localStore) != len(allPass) {
		t.Fatalf("the replicas family has %d cases; the rows name %d", len(allPass), len(localStore))
	}
	for _, row := range rows {
		t.Run(row.store+"/"+row.carrier, func(t *testing.T) {
			t.Parallel()
			tg, p := grpcReplicasTarget(t, row.carrier, open[row.store](t))
			p.BurstRounds = 2 // a local store executes once per replica in every round
			rep, err := Run(t.Context(), tg, p, RunOptions{Run: replicaIDs()})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, r := range rep.Results {
				// CreateRefund (metadata's second operation) declares no
				// slow variant: the in-flight case skips it by config.
				if r.Operation == "refunds" && r.Status == Skip && r.ID == "replicas/in-flight-other-replica" && strings.HasPrefix(r.Reason, "config does not supply") {
					continue
				}
				seen[r.ID] = true
				if r.Status != row.want[r.ID] {
					t.Errorf("%s: %s, want %s: %s %s", r.Name(), r.Status, row.want[r.ID], r.Observed, r.Reason)
				}
			}
			for id := range row.want {
				if !seen[id] {
					t.Errorf("%s: no verdict:%s", id, verdicts(rep))
				}
			}
			if ok, _ := rep.Outcome(); ok != !slices.Contains(slices.Collect(maps.Values(row.want)), Fail) {
				t.Errorf("outcome ok=%v:%s", ok, verdicts(rep))
			}
		})
	}
}

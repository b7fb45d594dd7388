package main

import (
	"testing"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// replicaStore returns the serve flags of a store shared by replicas.
func replicaStore(t *testing.T, kind string) []string {
	if kind == "postgres" {
		return []string{"--store", "postgres", "--dsn", testenv.RequirePostgres(t)}
	}
	return []string{"--store", "redis", "--redis-url", testenv.RequireRedis(t)}
}

// TestReplicaFamily runs the replicas/ family against two `idemcheck serve`
// replicas on one store: the correct reference passes it on PostgreSQL and
// on Redis; process-local-lock (which passes every single-replica case,
// see scenarios TestDefectMatrix) is caught by the burst spread over both.
func TestReplicaFamily(t *testing.T) {
	bin := testenv.BuildIdemcheck(t)
	rows := []struct {
		store, defect, explain string
		code                   int
		want                   map[string]string // case ID -> status
	}{
		{"postgres", "", "one atomic claim in the shared database: every promise holds across replicas", exitOK,
			map[string]string{"replicas/burst-across": "pass", "replicas/in-flight-other-replica": "pass", "replicas/replay-other-replica": "pass",
				"replicas/mismatch-other-replica": "pass", "replicas/other-user-other-replica": "pass", "replicas/ttl-other-replica": "pass"}},
		{"redis", "", "the same on Redis", exitOK,
			map[string]string{"replicas/burst-across": "pass", "replicas/in-flight-other-replica": "pass", "replicas/replay-other-replica": "pass",
				"replicas/mismatch-other-replica": "pass", "replicas/other-user-other-replica": "pass", "replicas/ttl-other-replica": "pass"}},
		{"postgres", "process-local-lock", "each replica's lock sees only its own requests: the spread burst executes more than once", exitFail,
			map[string]string{"replicas/burst-across": "fail"}},
		{"redis", "process-local-lock", "the same on Redis", exitFail,
			map[string]string{"replicas/burst-across": "fail"}},
	}
	for _, row := range rows {
		name := row.defect
		if name == "" {
			name = "correct"
		}
		t.Run(row.store+"/"+name, func(t *testing.T) {
			t.Parallel()
			args := append(replicaStore(t, row.store), "--ttl", "3s")
			if row.defect != "" {
				args = append(args, "--defect", row.defect)
			}
			urls := testenv.URLs(testenv.StartReplicas(t, bin, 2, args...))
			res, results := runReport(t, "--target", urls[0], "--replica", urls[1], "--ttl", "3s", "--run", "replicas/**")
			if res.code != row.code {
				t.Errorf("exit %d, want %d (%s)\nstdout:\n%s\nstderr:\n%s", res.code, row.code, row.explain, res.stdout, res.stderr)
			}
			got := map[string]bool{}
			for _, r := range results {
				got[r.ID] = true
				if want, ok := row.want[r.ID]; ok && r.Status != want {
					t.Errorf("%s@%s: %s, want %s (%s): %s %s", r.ID, r.Operation, r.Status, want, row.explain, r.Observed, r.Reason)
				}
			}
			for id := range row.want {
				if !got[id] {
					t.Errorf("%s: no result", id)
				}
			}
		})
	}
}

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// TestChaosReplicaKills runs `idemcheck chaos --target-cmd ... --replicas 2`
// against two `idemcheck serve` processes on one PostgreSQL while a random
// one is SIGKILLed and restarted every second, with 30% of responses
// dropped and some requests duplicated (the copy goes to the other
// replica): the correct reference keeps exactly-once; process-local-lock,
// whose lock is per process, executes the duplicated pairs twice. The
// 5,000-operation recipe is scripts/chaos-replicas.sh (docs/chaos.md).
func TestChaosReplicaKills(t *testing.T) {
	bin := testenv.BuildIdemcheck(t)
	dsn := testenv.RequirePostgres(t)
	rows := []struct {
		defect, explain string
		code            int
		want            string // in stdout
	}{
		{"", "one atomic claim in the shared database survives kills and lost responses", exitOK, "exactly-once: OK"},
		{"process-local-lock", "a duplicated request reaches both replicas inside the unguarded gap and executes twice", exitFail, "double-execution"},
	}
	for _, row := range rows {
		t.Run("defect="+row.defect, func(t *testing.T) {
			t.Parallel()
			serve := []string{bin, "serve", "--addr", "127.0.0.1:{port}", "--store", "postgres", "--dsn", dsn, "--lease", "1s"}
			if row.defect != "" {
				serve = append(serve, "--defect", row.defect)
			}
			js := filepath.Join(t.TempDir(), "chaos.json")
			r := runCLI(t, "chaos", "--target-cmd", strings.Join(serve, " "), "--replicas", "2", "--kill-every", "1s",
				"--ops", "600", "--concurrency", "16", "--fault", "drop-response:0.3", "--fault", "duplicate:0.05",
				"--seed", "3", "--deadline", "4m", "--json", js)
			if r.code != row.code || !strings.Contains(r.stdout, row.want) {
				t.Fatalf("%s: exit %d (want %d), want %q in stdout:\n%s\nstderr:\n%s", row.explain, r.code, row.code, row.want, r.stdout, r.stderr)
			}
			doc := readJSON(t, js)
			if kills, _ := doc["kills"].(float64); kills < 1 {
				t.Errorf("no replica was killed: %v", doc["kills"])
			}
			if reps, _ := doc["replicas"].([]any); len(reps) != 2 {
				t.Errorf("replicas %v, want 2", doc["replicas"])
			}
			t.Logf("%s", r.stdout)
		})
	}
}

// TestChaosRepeatedTarget: `chaos --target A --target B` balances over two
// running replicas on one PostgreSQL (nothing started, nothing killed);
// the oracle each replica keeps in memory is read on both and summed, so
// exactly-once is judged with it.
func TestChaosRepeatedTarget(t *testing.T) {
	bin := testenv.BuildIdemcheck(t)
	urls := testenv.URLs(testenv.StartReplicas(t, bin, 2, "--store", "postgres", "--dsn", testenv.RequirePostgres(t)))
	r := runCLI(t, "chaos", "--target", urls[0], "--target", urls[1], "--ops", "200", "--concurrency", "8",
		"--fault", "drop-response:0.3", "--fault", "duplicate:0.1", "--seed", "5", "--deadline", "60s")
	want := "replicas: " + urls[0] + " " + urls[1] + "; 0 killed"
	if r.code != exitOK || !strings.Contains(r.stdout, "exactly-once: OK") || !strings.Contains(r.stdout, want) {
		t.Fatalf("exit %d, want 0 with %q and exactly-once OK:\n%s\nstderr:\n%s", r.code, want, r.stdout, r.stderr)
	}
}

package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/memstore"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestChaosGRPCReplicas: chaos --replica over two replicas of the
// reference gRPC service (nothing started, nothing killed), every key's
// first answer dropped after the commit, so that its retry reaches the
// other replica. On one store the retry is replayed: exit 0, every key
// judged, the oracle counting both replicas' executions; on a memory
// store each (a store local to each replica) the retry executes again:
// double-execution, exit 1.
func TestChaosGRPCReplicas(t *testing.T) {
	o := demo.Options{TTL: 60 * time.Second, Lease: 3 * time.Second}
	shared := memstore.New()
	a, b := memstore.New(), memstore.New()
	t.Cleanup(func() {
		for _, s := range []reference.Store{shared, a, b} {
			_ = s.Close()
		}
	})
	rows := []struct {
		name   string
		stores []reference.Store
		code   int
		want   string
	}{
		{"one store", []reference.Store{shared, shared}, exitOK, "exactly-once: OK: 0 violations in 60 of 60 keys judged"},
		{"a store each", []reference.Store{a, b}, exitFail, "double-execution key="},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			httpBase, bases := demotest.GRPCReplicas(t, o, row.stores...)
			var out strings.Builder
			f := chaosFlags{sel: scenarios.Selection{Config: grpcReferenceConfig(t, httpBase, bases[0]), Replicas: bases[1:]},
				faults: []string{"drop-response:attempt=1"},
				run:    chaosRun{ops: 60, concurrency: 8, seed: 1, maxAttempts: 20, deadline: time.Minute}}
			err := runChaos(t.Context(), &out, f)
			code := exitOK
			if ee, ok := err.(*exitError); ok {
				code = ee.code
			} else if err != nil {
				t.Fatalf("error without exit code: %v", err)
			}
			want := fmt.Sprintf("replicas: %s %s; 0 killed", bases[0], bases[1])
			if code != row.code || !strings.Contains(out.String(), row.want) || !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "over gRPC") {
				t.Fatalf("exit %d (want %d), want %q and %q over gRPC:\n%s%v", code, row.code, row.want, want, out.String(), err)
			}
		})
	}
}

// grpcKillsConfig is the reference gRPC service started by target_cmd
// (serve --grpc on the harness's {port}, on PostgreSQL at dsn, publishing
// its events to a Kafka topic through the outbox, with serve's extra
// args), with events: reading that topic by the key's header. Each
// process's HTTP side listens on a port of its own (:0): no oracle URL
// can name it, and under kills a process's counts die with it anyway.
func grpcKillsConfig(t *testing.T, dsn string, brokers []string, topic string, serve ...string) string {
	t.Helper()
	cmd := strings.Join(append([]string{testenv.BuildIdemcheck(t), "serve", "--addr", "127.0.0.1:0", "--grpc", "127.0.0.1:{port}",
		"--store", "postgres", "--dsn", dsn, "--ttl", "60s", "--lease", "1s", "--events", "kafka://" + brokers[0] + "/" + topic}, serve...), " ")
	raw := demotest.GRPCConfig("http://127.0.0.1:1", "grpc://127.0.0.1:{port}")
	oracle := "oracle: {url: \"http://127.0.0.1:1/v1/effects?key={key}\", pointer: /executions}\n"
	slow := "      slow: {patch: {knobs: {delay_ms: 600}}, duration: 600ms}\n"
	if !strings.Contains(raw, oracle) || !strings.Contains(raw, slow) {
		t.Fatalf("demotest.GRPCConfig has no %q or no %q", oracle, slow)
	}
	raw = strings.Replace(raw, oracle, fmt.Sprintf("target_cmd: %q\nttl: 60s\nlease: 1s\n", cmd), 1)
	raw = strings.Replace(raw, slow, slow+"      business_error: {patch: {knobs: {fail: decline}}, status: FAILED_PRECONDITION}\n", 1)
	raw += fmt.Sprintf("events:\n  kafka: {brokers: [%q], topic: %s}\n  key: {header: idempotency-key}\n  event_id: /id\n  settle: 1s\n", brokers[0], topic)
	return writeTemp(t, "grpc-kills.yaml", raw)
}

// TestChaosGRPCEventsKills runs `idemcheck chaos` over two managed `serve
// --grpc --events` replicas on one PostgreSQL while one is SIGKILLed and
// restarted every second, with lost answers: the correct reference keeps
// one execution and publishes one event per key through its outbox (exit
// 0); with relay-republish each restarted relay publishes the events it
// had sent once more, without their ids, and the report names the keys
// and their events (event-duplicated, exit 1).
func TestChaosGRPCEventsKills(t *testing.T) {
	rows := []struct {
		defect string
		code   int
		want   string
	}{
		{"", exitOK, " 0 lost, 0 duplicated"},
		{"relay-republish", exitFail, "event-duplicated key="},
	}
	for _, row := range rows {
		t.Run("defect="+row.defect, func(t *testing.T) {
			// A server and a topic of its own: a relay claims any unsent
			// event of its database and publishes it to its own topic.
			dsn := testenv.RequireRestartablePostgres(t).DSN()
			brokers, _ := testenv.RequireKafka(t)
			topic := testenv.KafkaTopic(t, brokers, 2)
			var serve []string
			if row.defect != "" {
				serve = []string{"--defect", row.defect}
			}
			cfg := grpcKillsConfig(t, dsn, brokers, topic, serve...)
			js := filepath.Join(t.TempDir(), "chaos.json")
			cmd := []string{"chaos", "--config", cfg, "--replicas", "2", "--kill-every", "1s",
				"--ops", "500", "--concurrency", "4", "--fault", "drop-response:0.3",
				"--seed", "5", "--deadline", "3m", "--json", js}
			r := runCLI(t, cmd...)
			if r.code != row.code || !strings.Contains(r.stdout, row.want) || !strings.Contains(r.stdout, "events (kafka topic ") ||
				!strings.Contains(r.stdout, "against --target-cmd over gRPC ") {
				t.Fatalf("exit %d (want %d), want %q over gRPC in stdout:\n%s\nstderr:\n%s", r.code, row.code, row.want, r.stdout, r.stderr)
			}
			doc := readJSON(t, js)
			ev, _ := doc["events"].(map[string]any)
			if keys, _ := ev["keys"].(float64); keys < 250 {
				t.Errorf("events judged %v keys, want most of the 500", ev["keys"])
			}
			if kills, _ := doc["kills"].(float64); kills < 1 {
				t.Errorf("no replica was killed: %v", doc["kills"])
			}
			if reps, _ := doc["replicas"].([]any); len(reps) != 2 || !strings.HasPrefix(fmt.Sprint(reps[0]), "grpc://127.0.0.1:") {
				t.Errorf("replicas %v, want 2 grpc:// servers", doc["replicas"])
			}
			if doc["protocol"] != "gRPC" {
				t.Errorf("protocol %v, want gRPC", doc["protocol"])
			}
			t.Logf("%s", r.stdout)
		})
	}
}

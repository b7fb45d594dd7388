package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// eventsChaosConfig is examples/reference.yaml started by target_cmd
// (serve on PostgreSQL at dsn, publishing to a Kafka topic through its
// outbox, with serve's extra args), with events: reading that topic, the
// key in the idempotency-key header and the id in the payload.
func eventsChaosConfig(t *testing.T, bin, dsn string, brokers []string, topic string, serve ...string) string {
	t.Helper()
	raw, err := os.ReadFile("../../examples/reference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cmd := strings.Join(append([]string{bin, "serve", "--addr", "127.0.0.1:{port}", "--store", "postgres", "--dsn", dsn,
		"--ttl", "60s", "--lease", "1s", "--events", "kafka://" + brokers[0] + "/" + topic}, serve...), " ")
	cfg := string(raw)
	for old, repl := range map[string]string{
		"base_url: http://127.0.0.1:8080": "target_cmd: " + cmd,
		"ttl: 3s ":                        "ttl: 60s ",
		"lease: 30s ":                     "lease: 1s ",
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("examples/reference.yaml has no %q", old)
		}
		cfg = strings.Replace(cfg, old, repl, 1)
	}
	cfg += fmt.Sprintf("events:\n  kafka: {brokers: [%q], topic: %s}\n  key: {header: idempotency-key}\n  event_id: /id\n  settle: 1s\n", brokers[0], topic)
	return writeTemp(t, "events.yaml", cfg)
}

// TestChaosEventsKills runs `idemcheck chaos` over two `serve --events`
// replicas on one PostgreSQL while one is SIGKILLed and restarted every
// second, with lost answers, over HTTP and over gRPC (`serve --grpc
// --events`, target_cmd on grpc://127.0.0.1:{port}): the correct reference
// publishes exactly one event per executed key through its outbox (exit
// 0); with relay-republish each restarted relay publishes sent events
// again without their ids, and the report names the keys and their
// events (event-duplicated, exit 1).
func TestChaosEventsKills(t *testing.T) {
	bin := testenv.BuildIdemcheck(t)
	rows := []struct {
		defect string
		code   int
		want   string
	}{
		{"", exitOK, " 0 lost, 0 duplicated"},
		{"relay-republish", exitFail, "event-duplicated key="},
	}
	carriers := []struct {
		name   string
		config func(t *testing.T, dsn string, brokers []string, topic string, serve ...string) string
		ops    int
		over   string // the report's target line
	}{
		{"http", func(t *testing.T, dsn string, brokers []string, topic string, serve ...string) string {
			return eventsChaosConfig(t, bin, dsn, brokers, topic, serve...)
		}, 200, "over HTTP/1.1 "},
		{"grpc", grpcKillsConfig, 500, "against --target-cmd over gRPC "},
	}
	for _, c := range carriers {
		for _, row := range rows {
			t.Run(c.name+"/defect="+row.defect, func(t *testing.T) {
				// A server and a broker of its own: a relay claims any unsent
				// event of its database and publishes it to its own topic.
				dsn := testenv.RequireRestartablePostgres(t).DSN()
				brokers, _ := testenv.RequireKafka(t)
				topic := testenv.KafkaTopic(t, brokers, 2)
				var serve []string
				if row.defect != "" {
					serve = []string{"--defect", row.defect}
				}
				js := filepath.Join(t.TempDir(), "chaos.json")
				r := runCLI(t, "chaos", "--config", c.config(t, dsn, brokers, topic, serve...), "--replicas", "2", "--kill-every", "1s",
					"--ops", strconv.Itoa(c.ops), "--concurrency", "8", "--fault", "drop-response:0.3",
					"--seed", "5", "--deadline", "3m", "--json", js)
				if r.code != row.code || !strings.Contains(r.stdout, row.want) || !strings.Contains(r.stdout, "events (kafka topic ") ||
					!strings.Contains(r.stdout, c.over) {
					t.Fatalf("exit %d (want %d), want %q and %q in stdout:\n%s\nstderr:\n%s", r.code, row.code, row.want, c.over, r.stdout, r.stderr)
				}
				doc := readJSON(t, js)
				ev, _ := doc["events"].(map[string]any)
				if keys, _ := ev["keys"].(float64); keys < float64(c.ops)/2 {
					t.Errorf("events judged %v keys, want most of the %d", ev["keys"], c.ops)
				}
				if kills, _ := doc["kills"].(float64); kills < 1 {
					t.Errorf("no replica was killed: %v", doc["kills"])
				}
				if c.name == "grpc" {
					if reps, _ := doc["replicas"].([]any); len(reps) != 2 || !strings.HasPrefix(fmt.Sprint(reps[0]), "grpc://127.0.0.1:") {
						t.Errorf("replicas %v, want 2 grpc:// servers", doc["replicas"])
					}
					if doc["protocol"] != "gRPC" {
						t.Errorf("protocol %v, want gRPC", doc["protocol"])
					}
				}
				t.Logf("%s", r.stdout)
			})
		}
	}
}

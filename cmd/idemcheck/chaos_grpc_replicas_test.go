package main

import (
	"fmt"
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

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadGRPC: idemcheck load --config on the reference gRPC service
// (serve --grpc) runs its modes with the paced client: the correct service
// exits 0 with the report's protocol gRPC and its thresholds judged; with
// no-inflight-lock contention exits 1 on violations; a bare --target
// grpc:// (no key place, no rpc:) is refused in one line, exit 2.
func TestLoadGRPC(t *testing.T) {
	httpBase, grpcBase := serveGRPCForTest(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "load.json")
	code, stderr := runCaptured(t, "load", "--config", grpcReferenceConfig(t, httpBase, grpcBase), "--mode", "mix",
		"--rate", "200", "--duration", "1s", "--json", out, "--html", filepath.Join(dir, "load.html"),
		"--threshold", "hit.p50<5s", "--threshold", "hit.p50/miss.p50<100", "--threshold", "violations==0")
	if code != 0 {
		t.Fatalf("mix on the correct service: exit %d, want 0: %s", code, stderr)
	}
	doc := readJSON(t, out)
	paths, _ := doc["paths"].(map[string]any)
	if doc["protocol"] != "gRPC" || doc["latency_from"] != "intended" || doc["violations"] != 0.0 || paths["hit"] == nil || paths["miss"] == nil {
		t.Fatalf("report: protocol %v, latency_from %v, violations %v, paths %v", doc["protocol"], doc["latency_from"], doc["violations"], len(paths))
	}
	if th, _ := doc["thresholds"].([]any); len(th) != 3 {
		t.Fatalf("thresholds %v: want the 3 given, judged", doc["thresholds"])
	}

	httpBase, grpcBase = serveGRPCForTest(t, "no-inflight-lock")
	code, stderr = runCaptured(t, "load", "--config", grpcReferenceConfig(t, httpBase, grpcBase), "--mode", "contention",
		"--rate", "200", "--duration", "1s")
	if code != 1 || !strings.Contains(stderr, "idempotency violations under load") {
		t.Fatalf("no-inflight-lock in contention: exit %d, want 1 on violations: %s", code, stderr)
	}

	code, stderr = runCaptured(t, "load", "--target", "grpc://127.0.0.1:1", "--rate", "1", "--duration", "1s")
	if want := "load: a gRPC target needs --config"; code != 2 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("bare --target grpc://: exit %d, stderr %q; want 2 and one line with %q", code, stderr, want)
	}
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
)

// serveGRPCForTest runs serve --grpc in-process with defects and returns
// the HTTP and gRPC base URLs; it stops when t ends.
func serveGRPCForTest(t *testing.T, defects ...string) (httpBase, grpcBase string) {
	t.Helper()
	return serveGRPCEventsForTest(t, "", defects...)
}

// serveGRPCEventsForTest is serveGRPCForTest with --events events (""
// for none).
func serveGRPCEventsForTest(t *testing.T, events string, defects ...string) (httpBase, grpcBase string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- runServe(ctx, pw, serveFlags{addr: "127.0.0.1:0", grpc: "127.0.0.1:0", ttl: 5 * time.Second, lease: 5 * time.Second,
			store: "memory", maxBody: 1 << 20, defects: defects, events: events})
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("serve did not shut down")
		}
	})
	rd := bufio.NewReader(pr)
	for httpBase == "" || grpcBase == "" {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("serve's listening lines: %v", err)
		}
		rest, _ := strings.CutPrefix(strings.TrimSpace(line), "idemcheck: listening on ")
		switch {
		case strings.HasPrefix(rest, "http://"):
			httpBase = rest
		case strings.HasPrefix(rest, "grpc://"):
			grpcBase, _, _ = strings.Cut(rest, " ")
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return httpBase, grpcBase
}

func grpcReferenceConfig(t *testing.T, httpBase, grpcBase string) string {
	return writeTemp(t, "grpc.yaml", demotest.GRPCConfig(httpBase, grpcBase))
}

// TestRunGRPC: idemcheck run on the reference gRPC service (serve --grpc)
// exits 0; with a defect, 1, naming the case that caught it.
func TestRunGRPC(t *testing.T) {
	httpBase, grpcBase := serveGRPCForTest(t)
	out := filepath.Join(t.TempDir(), "r.json")
	if code, stderr := runCaptured(t, "run", "--config", grpcReferenceConfig(t, httpBase, grpcBase), "--json", out); code != 0 {
		t.Fatalf("the reference over gRPC: exit %d, want 0: %s", code, stderr)
	}
	// The report names the RPC protocol, not the HTTP/2 under it.
	if p := readJSON(t, out)["protocol"]; p != "gRPC" {
		t.Errorf("protocol %v, want gRPC", p)
	}
	httpBase, grpcBase = serveGRPCForTest(t, "no-fingerprint")
	code, stderr := runCaptured(t, "run", "--config", grpcReferenceConfig(t, httpBase, grpcBase))
	if code != 1 || !strings.Contains(stderr, "mismatch/changed-body") {
		t.Fatalf("no-fingerprint over gRPC: exit %d, want 1 naming mismatch/changed-body: %s", code, stderr)
	}
}

// TestRunGRPCEvents: serve --grpc --events publishes the gRPC service's
// events through the store's outbox (the HTTP reference's relay sends
// them): idemcheck run with events: passes the outbox cases over gRPC
// (exit 0); with event-on-replay, exit 1 naming outbox/none-for-replay.
func TestRunGRPCEvents(t *testing.T) {
	brokers, _ := testenv.RequireKafka(t)
	for _, row := range []struct {
		defect string
		code   int
	}{{"", exitOK}, {"event-on-replay", exitFail}} {
		t.Run("defect="+row.defect, func(t *testing.T) {
			topic := testenv.KafkaTopic(t, brokers, 2)
			var defects []string
			if row.defect != "" {
				defects = []string{row.defect}
			}
			httpBase, grpcBase := serveGRPCEventsForTest(t, "kafka://"+brokers[0]+"/"+topic, defects...)
			// The invalid variant for outbox/none-for-rejected, the
			// transient one for outbox/none-for-failed.
			slow := "      slow: {patch: {knobs: {delay_ms: 600}}, duration: 600ms}\n"
			raw := demotest.GRPCConfig(httpBase, grpcBase)
			if !strings.Contains(raw, slow) {
				t.Fatalf("demotest.GRPCConfig has no %q", slow)
			}
			raw = strings.Replace(raw, slow, slow+"      invalid: {patch: {payment: {amount: -1}}, status: INVALID_ARGUMENT}\n"+
				"      transient_error: {patch: {knobs: {fail: transient}}, status: UNAVAILABLE}\n", 1)
			cfg := writeTemp(t, "grpc.yaml", raw+fmt.Sprintf(
				"events:\n  kafka: {brokers: [%q], topic: %s}\n  key: {header: idempotency-key}\n  event_id: /id\n  settle: 1s\n", brokers[0], topic))
			out := filepath.Join(t.TempDir(), "r.json")
			code, stderr := runCaptured(t, "run", "--config", cfg, "--run", "outbox/**", "--json", out)
			if code != row.code || (row.defect != "" && !strings.Contains(stderr, "outbox/none-for-replay")) {
				t.Fatalf("exit %d, want %d (naming outbox/none-for-replay with the defect): %s", code, row.code, stderr)
			}
			results, _ := readJSON(t, out)["results"].([]any)
			passed, other := 0, 0
			for _, r := range results {
				switch r.(map[string]any)["status"] {
				case "pass":
					passed++
				case "skip": // lease-takeover (no lease declared), the resource_id cases
				default:
					other++
				}
			}
			if row.defect == "" && (passed < 8 || other > 0) {
				t.Errorf("%d outbox results, %d passed, %d neither passed nor skipped: want at least the 8 that need no lease or resource_id passed, none failed: %s", len(results), passed, other, stderr)
			}
		})
	}
}

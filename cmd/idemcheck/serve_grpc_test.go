package main

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/demotest"
)

// serveGRPCForTest runs serve --grpc in-process with defects and returns
// the HTTP and gRPC base URLs; it stops when t ends.
func serveGRPCForTest(t *testing.T, defects ...string) (httpBase, grpcBase string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- runServe(ctx, pw, serveFlags{addr: "127.0.0.1:0", grpc: "127.0.0.1:0", ttl: 5 * time.Second, lease: 5 * time.Second,
			store: "memory", maxBody: 1 << 20, defects: defects})
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

package idemchecktest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// grpcConfigFile is a config of the reference gRPC service's
// CreatePayment (AIP-155) counted by the effects oracle at httpBase; no
// base_url: GRPCServer's listener is the target.
func grpcConfigFile(t *testing.T, httpBase string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "grpc.yaml")
	if err := os.WriteFile(path, []byte(demotest.GRPCConfig(httpBase, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// grpcReference checks the reference gRPC service, with defects, through
// GRPCServer.
func grpcReference(t *testing.T, defects ...reference.Defect) {
	httpBase, srv := demotest.GRPCServer(t, demo.Options{TTL: 5 * time.Second, Lease: 5 * time.Second}, defects)
	idemchecktest.GRPCServer(t, srv, idemchecktest.Config{Config: grpcConfigFile(t, httpBase)},
		idemchecktest.Only("replay/**", "mismatch/**", "missing/**", "concurrent/**", "scope/**"))
}

func init() {
	inner["grpc-no-fingerprint"] = func(t *testing.T) { grpcReference(t, reference.NoFingerprint) }
}

// TestGRPCServer: the reference gRPC service, passed in as a *grpc.Server
// with its service and reflection registered, passes; with the
// no-fingerprint defect the go test fails in the subtest of the case
// that catches it.
func TestGRPCServer(t *testing.T) {
	t.Run("reference", func(t *testing.T) { grpcReference(t) })
	out, failed := runInner(t, "grpc-no-fingerprint", 60*time.Second)
	if !failed || !strings.Contains(out, "--- FAIL: TestInner/mismatch/changed-body@payments") {
		t.Fatalf("no-fingerprint over gRPC: failed=%v, want the subtest mismatch/changed-body@payments to fail:\n%s", failed, out)
	}
}

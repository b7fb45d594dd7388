package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// TestLoadCLIWorkerCapBreaches: a saturated loader (4 workers, 1000 req/s
// planned, a 20 ms handler) must not make the server look fast: the
// delayed requests are counted and warned about, and a latency threshold
// the figures timed from the send would meet (about 25 ms) exits 3: timed
// from the intended send the held-back requests' wait is in the p99.
func TestLoadCLIWorkerCapBreaches(t *testing.T) {
	url := demotest.Serve(t, demo.Options{})
	out := filepath.Join(t.TempDir(), "late.json")
	r := runCLI(t, "load", "--target", url, "--mode", "miss", "--rate", "1000", "--duration", "1s",
		"--workers", "4", "--max-workers", "4", "--body-patch", `{"delay_ms":20}`,
		"--threshold", "miss.p99<500ms", "--json", out)
	doc := readJSON(t, out)
	if r.code != exitThreshold || doc["delayed"].(float64) == 0 {
		t.Fatalf("exit %d, delayed %v: %s\n%s", r.code, doc["delayed"], r.stderr, r.stdout)
	}
	if !strings.Contains(r.stdout+r.stderr, "max-workers were busy") {
		t.Fatalf("no warning about the worker cap:\n%s\n%s", r.stdout, r.stderr)
	}
}

package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// check runs the catalog under --strict with config against build d of
// adcpagent, served over loopback.
func check(t *testing.T, config string, d defect) (int, *testenv.RunReport) {
	t.Helper()
	s := newServer(3*time.Second, d)
	srv := httptest.NewServer(s.routes())
	t.Cleanup(srv.Close)
	return testenv.RunConfig(t, config, func(c map[string]any) { c["base_url"] = srv.URL }, "--strict")
}

// configs are the agent's three faces: MCP with AdCP's idempotency_key
// argument, MCP with the key in _meta, and plain JSON-RPC 2.0 at /rpc.
var configs = []string{"idemcheck.yaml", "idemcheck-meta.yaml", "idemcheck-jsonrpc.yaml"}

// TestCorrectBuild: the correct build passes the whole catalog under
// --strict: nothing fails or warns, and nothing stays undecided but
// missing/rejected, whose keyless request a per-key oracle cannot count
// (unverifiable by design: the configs keep the per-key oracle users
// write, which lets the cases run in parallel).
func TestCorrectBuild(t *testing.T) {
	for _, config := range configs {
		t.Run(config, func(t *testing.T) {
			code, rep := check(t, config, "")
			if err := rep.Passed(code, "missing/rejected"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestDefects: each planted defect fails the run, naming the case that
// catches it, over every face.
func TestDefects(t *testing.T) {
	for d, want := range map[defect]string{
		ignoresKey:         "replay/single-execution",
		noFingerprint:      "mismatch/changed-body",
		leaksPayload:       "security/conflict-no-leak",
		executesOnMismatch: "mismatch/original-survives",
	} {
		for _, config := range configs {
			t.Run(string(d)+"/"+config, func(t *testing.T) {
				code, rep := check(t, config, d)
				if err := rep.Caught(code, want); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// TestInitFromToolsList: init --mcp writes a config for create_media_buy
// from the agent's tools/list, with AdCP's idempotency_key as the key and
// the adcp preset, that idemcheck reads (list).
func TestInitFromToolsList(t *testing.T) {
	srv := httptest.NewServer(newServer(3*time.Second, "").routes())
	t.Cleanup(srv.Close)
	config := filepath.Join(t.TempDir(), "idemcheck.yaml")
	if code, out := testenv.Idemcheck(t, nil, "init", "--mcp", srv.URL+"/mcp", "--header", "Authorization: Bearer alice", "-o", config); code != 0 {
		t.Fatalf("init exit %d: %s", code, out)
	}
	raw, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"carrier: mcp", "key: {pointer: /idempotency_key}", "tool: create_media_buy", "ttl_tool: get_adcp_capabilities", "preset: adcp"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("config lacks %q:\n%s", want, raw)
		}
	}
	if code, out := testenv.Idemcheck(t, []string{"IDEMCHECK_TOKEN_1=alice", "IDEMCHECK_TOKEN_2=bob"}, "list", "--config", config); code != 0 {
		t.Errorf("list exit %d: %s", code, out)
	}
}

// TestLoad: idemcheck load over the MCP carrier (the paced client, through
// the carrier's Do: its sessions, the answer read from the document) on
// keys that outlive the run. The correct build replays every hit (exit 0,
// none differed); the build that ignores its key executes each hit anew,
// and every second execution is a violation (exit 1).
func TestLoad(t *testing.T) {
	for _, tc := range []struct {
		d    defect
		code int
		want string
	}{{"", 0, "violations: 0 violations of "}, {ignoresKey, 1, "second-execution key="}} {
		t.Run("build "+string(tc.d), func(t *testing.T) {
			s := newServer(time.Hour, tc.d)
			srv := httptest.NewServer(s.routes())
			t.Cleanup(srv.Close)
			config := testenv.EditConfig(t, "idemcheck.yaml", func(c map[string]any) { c["base_url"] = srv.URL })
			code, out := testenv.Idemcheck(t, []string{"IDEMCHECK_TOKEN_1=alice", "IDEMCHECK_TOKEN_2=bob"},
				"load", "--config", config, "--mode", "hit", "--rate", "100", "--duration", "2s", "--ttl", "1h")
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, tc.code, tc.want, out)
			}
		})
	}
}

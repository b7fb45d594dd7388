package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/scenarios"
)

// chaosGRPC runs idemcheck chaos on a gRPC config in-process and returns
// its exit code and stdout.
func chaosGRPC(t *testing.T, config string, ops int, history, jsonPath, htmlPath string, faults ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	f := chaosFlags{sel: scenarios.Selection{Config: config}, faults: faults, jsonPath: jsonPath, htmlPath: htmlPath,
		run: chaosRun{ops: ops, concurrency: 8, seed: 1, history: history, maxAttempts: 20, deadline: 2 * time.Minute}}
	err := runChaos(t.Context(), &out, f)
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code, out.String() + err.Error()
	case err != nil:
		t.Fatalf("error without exit code: %v", err)
	}
	return exitOK, out.String()
}

// grpcBusinessConfig is the reference gRPC config with a declined card
// (FAILED_PRECONDITION, kept and replayed by the reference) among the
// operation's variants, so that the op mix has business operations.
func grpcBusinessConfig(t *testing.T, httpBase, grpcBase string) string {
	cfg := strings.Replace(demotest.GRPCConfig(httpBase, grpcBase), "    variants:\n",
		"    variants:\n      business_error: {patch: {knobs: {fail: decline}}, status: FAILED_PRECONDITION}\n", 1)
	return writeTemp(t, "grpc-business.yaml", cfg)
}

// TestChaosGRPC: idemcheck chaos against the reference gRPC service
// (serve --grpc). Every key's first answer is dropped after the upstream
// committed (and more answers and requests at random): the correct
// service replays each, exactly once, exit 0, the reports naming gRPC;
// analyze agrees on the history. With no-inflight-lock the slow storms'
// overlapping retries execute again; with no-cache-4xx a declined card
// whose answer was dropped is charged again on the retry: violations,
// exit 1.
func TestChaosGRPC(t *testing.T) {
	faults := []string{"drop-response:attempt=1", "drop-response:0.2", "drop-request:0.05", "delay:p=0.05,before=20ms"}
	t.Run("correct", func(t *testing.T) {
		httpBase, grpcBase := serveGRPCForTest(t)
		dir := t.TempDir()
		history, jsonPath, htmlPath := filepath.Join(dir, "h.jsonl"), filepath.Join(dir, "c.json"), filepath.Join(dir, "c.html")
		code, out := chaosGRPC(t, grpcBusinessConfig(t, httpBase, grpcBase), 80, history, jsonPath, htmlPath, faults...)
		if code != exitOK || !strings.Contains(out, "over gRPC") || !strings.Contains(out, "exactly-once: OK: 0 violations in 80 of 80 keys judged") {
			t.Fatalf("exit %d, want 0 and every key judged exactly once over gRPC:\n%s", code, out)
		}
		// The drops came after the commit: each key's first attempt got a
		// created payment upstream that the client never saw, and the
		// client ended with that payment, replayed.
		committed, replayed := dropsAfterCommit(t, history)
		if committed < 60 || replayed != committed {
			t.Fatalf("%d first attempts committed and dropped, %d of them replayed to the client; want most of the 80 keys, all replayed", committed, replayed)
		}
		var res struct {
			Protocol string         `json:"protocol"`
			Faults   map[string]int `json:"faults"`
		}
		b, err := os.ReadFile(jsonPath)
		if err == nil {
			err = json.Unmarshal(b, &res)
		}
		if err != nil || res.Protocol != "gRPC" || res.Faults["drop-response"] < 80 || res.Faults["drop-request"] == 0 {
			t.Errorf("--json: %v: protocol %q, faults %v", err, res.Protocol, res.Faults)
		}
		if page, err := os.ReadFile(htmlPath); err != nil || !bytes.Contains(page, []byte("over gRPC")) {
			t.Errorf("--html does not name gRPC (%v)", err)
		}
		if got := run([]string{"analyze", history}); got != exitOK {
			t.Errorf("analyze: exit %d, want 0 like the live run", got)
		}
	})
	for _, defect := range []string{"no-inflight-lock", "no-cache-4xx"} {
		t.Run(defect, func(t *testing.T) {
			httpBase, grpcBase := serveGRPCForTest(t, defect)
			code, out := chaosGRPC(t, grpcBusinessConfig(t, httpBase, grpcBase), 100, "", "", "", faults...)
			if code != exitFail || !strings.Contains(out, "double-execution key=") {
				t.Fatalf("exit %d, want 1 with double executions:\n%s", code, out)
			}
			t.Logf("%s", lastLines(out, 4))
		})
	}
}

// dropsAfterCommit reads a history: how many keys of the kinds that end
// with the payment (normal, storm) had their first attempt dropped after
// the upstream created it, and for how many of those the client ended
// with that same payment.
func dropsAfterCommit(t *testing.T, path string) (committed, replayed int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dropped := map[string]string{} // key -> the id its first attempt created
	var ops []chaos.Op
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Type string `json:"type"`
			chaos.Event
			Kind    string `json:"kind"`
			OpID    string `json:"id"`
			Outcome string `json:"outcome"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		switch {
		case line.Type == "attempt" && line.Attempt == 1 && line.Fault == "drop-response" && line.Client == chaos.ClientUnknown &&
			len(line.Upstream) == 1 && line.Upstream[0].GRPCCode == "OK" && line.Upstream[0].ID != "":
			dropped[line.Key] = line.Upstream[0].ID
		case line.Type == "op" && (line.Kind == chaos.KindNormal || line.Kind == chaos.KindStorm):
			ops = append(ops, chaos.Op{Key: line.Key, Outcome: line.Outcome, ID: line.OpID})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		id, ok := dropped[op.Key]
		if !ok {
			continue
		}
		committed++
		if op.Outcome == chaos.ClientOK && op.ID == id {
			replayed++
		}
	}
	return committed, replayed
}

// TestChaosGRPCRefuses: over gRPC, a fault kind or mode without a gRPC
// form is refused in one line, exit 2, never applied over HTTP; a gRPC
// server that does not answer is exit 4.
func TestChaosGRPCRefuses(t *testing.T) {
	cfg := grpcReferenceConfig(t, "http://127.0.0.1:1", "grpc://"+strings.TrimPrefix(closedPort(t), "http://"))
	for spec, want := range map[string]string{
		"reset-midbody":          "reset-midbody has no gRPC form yet (docs/grpc.md); over gRPC: delay, drop-request, drop-response, duplicate, hangup, status",
		"drop-response:mode=rst": `token "mode=rst": want one of unavailable, deadline`,
	} {
		code, stderr := runCaptured(t, "chaos", "--config", cfg, "--ops", "1", "--fault", spec)
		if code != exitUsage || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("--fault %s: exit %d, stderr %q; want 2 and one line with %q", spec, code, stderr, want)
		}
	}
	if code, stderr := runCaptured(t, "chaos", "--config", cfg, "--ops", "1", "--fault", "drop-response:0.5"); code != exitUnreachable {
		t.Errorf("nothing at the gRPC address: exit %d (%s), want 4", code, stderr)
	}
}

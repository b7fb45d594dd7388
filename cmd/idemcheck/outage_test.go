package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/wire"
)

// TestChaosThroughStoreOutages runs `idemcheck chaos` (with lost
// responses) against `idemcheck serve` on a real PostgreSQL and a real
// Redis while the database is stopped for a few seconds and started
// again, twice. The exactly-once checker watches the whole run; the test
// adds what it cannot see from the history:
//   - during each outage a fresh request is answered 503 application/problem+json;
//   - no operation executes twice and every client answer is the committed
//     one (the checker, exit 0);
//   - every acknowledged operation survives: after the run its key replays
//     the same resource;
//   - no key stays wedged: after recovery every key of the run answers
//     (replay or a first execution), never 409 or 503.
func TestChaosThroughStoreOutages(t *testing.T) {
	if testing.Short() {
		t.Skip("stops and restarts databases; skipped under -short")
	}
	bin := testenv.BuildIdemcheck(t)
	cases := []struct {
		name, explanation string
		// start provides the database and returns serve's store flags and
		// how to stop and start the database.
		start func(t *testing.T) (args []string, stop func(), restart func(context.Context) error)
	}{
		{"postgres", "records and charges commit in one transaction; a fast shutdown cuts every session",
			func(t *testing.T) ([]string, func(), func(context.Context) error) {
				pg := testenv.RequireRestartablePostgres(t)
				return []string{"--store", "postgres", "--dsn", pg.DSN()}, pg.Stop, pg.Start
			}},
		{"redis", "records in Redis with an fsynced append-only file, killed with SIGKILL",
			func(t *testing.T) ([]string, func(), func(context.Context) error) {
				rs := testenv.RequireDurableRedis(t)
				return []string{"--store", "redis", "--redis-url", rs.URL()}, rs.Kill, rs.Restart
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, stop, restart := tc.start(t)
			// A short lease: a claim whose completion the outage swallowed
			// is taken over quickly instead of answering 409 for 30 s.
			srv := testenv.StartServe(t, bin, append(args, "--lease", "2s")...)
			dir := t.TempDir()
			hist, report := filepath.Join(dir, "history.jsonl"), filepath.Join(dir, "chaos.json")
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			run := exec.CommandContext(ctx, bin, "chaos", "--config", outageConfig(t, srv.URL), "--ops", "400", "--concurrency", "8",
				"--fault", "drop-response:0.1", "--max-attempts", "60", "--history", hist, "--json", report)
			var out bytes.Buffer
			run.Stdout, run.Stderr = &out, &out
			if err := run.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- run.Wait() }()

			tg, err := apispec.FromURL(srv.URL, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for outage := 1; outage <= 2; outage++ {
				sleep(t, ctx, 1500*time.Millisecond)
				stop()
				r := post(t, tg, &tg.Operations[0], uuid.NewString(), tg.Operations[0].Body)
				if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Content-Type") != "application/problem+json" {
					t.Errorf("%s: during outage %d a request got %d %s, want 503 application/problem+json",
						tc.explanation, outage, r.StatusCode, r.Header.Get("Content-Type"))
				}
				sleep(t, ctx, 3*time.Second)
				if err := restart(ctx); err != nil {
					t.Fatalf("restart %d: %v", outage, err)
				}
			}
			if err := <-done; err != nil {
				t.Fatalf("%s: chaos: %v (exit 0 means no exactly-once violation)\n%s", tc.explanation, err, out.String())
			}
			var rep struct {
				chaos.Findings
				Requested int `json:"requested_ops"`
			}
			b, err := os.ReadFile(report)
			if err != nil || json.Unmarshal(b, &rep) != nil {
				t.Fatalf("chaos report: %v\n%s", err, b)
			}
			if len(rep.Violations) != 0 || rep.Ops != rep.Requested {
				t.Fatalf("%d violations, %d of %d ops: %+v", len(rep.Violations), rep.Ops, rep.Requested, rep.Violations)
			}
			t.Logf("%s: %s", tc.name, strings.TrimSpace(out.String()))

			// After recovery (and one lease for claims the outage orphaned),
			// every normal key answers: acknowledged ones replay their id.
			sleep(t, ctx, 2500*time.Millisecond)
			ops := readOps(t, hist)
			acked, checked := 0, 0
			for _, op := range ops {
				if op.Kind != chaos.KindNormal {
					continue
				}
				o := opNamed(t, tg, op.Operation)
				r := post(t, tg, o, op.Key, o.Body)
				checked++
				if r.StatusCode == http.StatusConflict || r.StatusCode >= 500 {
					t.Errorf("key %s (%s, outcome %s) is wedged after recovery: %d", op.Key, op.Operation, op.Outcome, r.StatusCode)
					continue
				}
				if op.Outcome == chaos.ClientOK && op.ID != "" {
					acked++
					if r.Header.Get("Idempotent-Replayed") != "true" || !strings.Contains(r.body, `"`+op.ID+`"`) {
						t.Errorf("acknowledged key %s (id %s) did not survive: %d replayed=%q %s",
							op.Key, op.ID, r.StatusCode, r.Header.Get("Idempotent-Replayed"), r.body)
					}
				}
			}
			if acked == 0 {
				t.Fatalf("no acknowledged operation to check among %d keys", checked)
			}
			t.Logf("%s: %d normal keys answer after recovery, %d acknowledged ones replay their id", tc.name, checked, acked)
		})
	}
}

// outageConfig is examples/reference.yaml aimed at base, without the
// transient_error variant: a 503 the store outage makes the middleware
// answer before running the handler is, in the history, one more 5xx than
// the oracle's executions; the checker leaves such keys not judged (5xx
// answers of two bodies), so transient operations prove nothing here.
func outageConfig(t *testing.T, base string) string {
	t.Helper()
	raw, err := os.ReadFile("../../examples/reference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "base_url:"):
			line = "base_url: " + base
		case strings.Contains(line, "transient_error:"):
			continue
		}
		kept = append(kept, line)
	}
	path := filepath.Join(t.TempDir(), "outage.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type reply struct {
	*http.Response
	body string
}

// post sends one request of operation o under key as the run's principal.
func post(t *testing.T, tg *apispec.Target, o *apispec.Operation, key string, body []byte) reply {
	t.Helper()
	req, err := http.NewRequest(o.Method, tg.BaseURL+o.Path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range tg.Principals[0].Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set(tg.KeyHeader, `"`+key+`"`)
	c := wire.NewClient(10 * time.Second)
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return reply{resp, b.String()}
}

func opNamed(t *testing.T, tg *apispec.Target, name string) *apispec.Operation {
	t.Helper()
	for i := range tg.Operations {
		if tg.Operations[i].Name == name {
			return &tg.Operations[i]
		}
	}
	t.Fatalf("history names operation %q the target lacks", name)
	return nil
}

// readOps returns the "op" lines of a chaos history.
func readOps(t *testing.T, path string) []chaos.Op {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ops []chaos.Op
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var op chaos.Op
		if json.Unmarshal(sc.Bytes(), &op) == nil && op.Type == "op" {
			ops = append(ops, op)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ops
}

func sleep(t *testing.T, ctx context.Context, d time.Duration) {
	t.Helper()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

// TestChaosCLI: the documented exit codes of `idemcheck chaos`, and
// `idemcheck analyze` agreeing with it on the kept history.
func TestChaosCLI(t *testing.T) {
	good := demotest.Serve(t, demo.Options{})
	defective := demotest.Serve(t, demo.Options{Defects: []string{"no-inflight-lock"}})
	// Keys live 2s: a storm's retries after Retry-After come when the key
	// may have expired, and the fresh execution is legal (this reported
	// 1-11 false double-executions per run before the checker took the TTL).
	shortTTL := demotest.Serve(t, demo.Options{TTL: 2 * time.Second})
	dir := t.TempDir()
	cases := []struct {
		name, target, history string
		ttl                   time.Duration
		faults                []string
		code                  int
		out                   string
		ops                   int // 0: 300
	}{
		{"correct reference", good, filepath.Join(dir, "good.jsonl"), 0, []string{"drop-response:0.3"}, exitOK, "exactly-once: OK", 0},
		{"no-inflight-lock", defective, filepath.Join(dir, "bad.jsonl"), 0, []string{"drop-response:0.3"}, exitFail, "double-execution key=", 0},
		{"short TTL declared", shortTTL, filepath.Join(dir, "ttl.jsonl"), 2 * time.Second, []string{"drop-response:0.3"}, exitOK, "key TTL 2s − margin 500ms: ", 0},
		// The harness dropped the answers, the server replayed each time:
		// before, "exactly-once: 9 VIOLATIONS (lost 9)", exit 1.
		{"most answers dropped", good, filepath.Join(dir, "drop90.jsonl"), 0, []string{"drop-response:0.9"}, exitOK, "not judged: the harness dropped every answer", 100},
		{"every answer dropped", good, filepath.Join(dir, "drop100.jsonl"), 0, []string{"drop-response:1"}, exitIncomplete, "exactly-once: NOT ENOUGH EVIDENCE: 0 violations in 0 of 12 keys judged; 12 not judged: the harness dropped every answer 12", 12},
		{"bad fault spec", good, "", 0, []string{"drop-response:p=0.3,mode=slam"}, exitUsage, "", 0},
		{"unreachable", closedPort(t), "", 0, nil, exitUnreachable, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			ops := tc.ops
			if ops == 0 {
				ops = 300
			}
			f := chaosFlags{sel: scenarios.Selection{Target: tc.target, TTL: tc.ttl}, faults: tc.faults,
				run: chaosRun{ops: ops, concurrency: 12, seed: 3, history: tc.history, maxAttempts: 20, deadline: 2 * time.Minute}}
			err := runChaos(t.Context(), &out, f)
			code := exitOK
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			} else if err != nil {
				t.Fatalf("error without exit code: %v", err)
			}
			if code != tc.code || !strings.Contains(out.String(), tc.out) {
				t.Fatalf("exit %d (%v), output:\n%s\nwant exit %d and %q", code, err, out.String(), tc.code, tc.out)
			}
			if tc.history != "" {
				if got := run([]string{"analyze", tc.history}); got != tc.code {
					t.Errorf("analyze %s: exit %d, want %d like the live run", tc.history, got, tc.code)
				}
			}
			if tc.ttl > 0 {
				t.Logf("%s", lastLines(out.String(), 3))
			}
		})
	}
}

// TestProxyCLI: the standalone proxy forwards, writes its history and
// stops cleanly when its context ends (SIGINT); bad flags are usage errors.
func TestProxyCLI(t *testing.T) {
	up := demotest.Serve(t, demo.Options{})
	pki := demotest.NewPKI(t)
	upstreams := []struct {
		name, url   string
		tls         apispec.TLS
		explanation string
	}{
		{"http", up, apispec.TLS{}, "a plain upstream"},
		{"https", pki.ServeTLS(t, demotest.App(t, demo.Options{}), false), apispec.TLS{CACert: pki.CAFile},
			"an https upstream whose certificate a private CA (--ca-cert) signs"},
	}
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) { proxyOnce(t, u.url, u.tls) })
	}
	listen := strings.TrimPrefix(closedPort(t), "http://")

	bad := []struct {
		name string
		f    proxyFlags
	}{
		{"no upstream", proxyFlags{listen: listen}},
		{"remote control API", proxyFlags{listen: listen, upstream: up, control: "0.0.0.0:8474"}},
		{"bad fault", proxyFlags{listen: listen, upstream: up, faults: []string{"delay:p=1"}}},
	}
	for _, tc := range bad {
		var ee *exitError
		if err := runProxy(t.Context(), io.Discard, tc.f); !errors.As(err, &ee) || ee.code != exitUsage {
			t.Errorf("%s: %v, want a usage error", tc.name, err)
		}
	}
}

// proxyOnce runs idemcheck proxy in front of upstream and checks an
// injected fault and its history line.
func proxyOnce(t *testing.T, upstream string, tc apispec.TLS) {
	listen := strings.TrimPrefix(closedPort(t), "http://")
	history := filepath.Join(t.TempDir(), "h.jsonl")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- runProxy(ctx, io.Discard, proxyFlags{listen: listen, upstream: upstream, history: history, tls: tc,
			faults: []string{"status:path=/v1/refunds"}, seed: 1, keyHeader: "Idempotency-Key", idPointer: "/id", maxKeys: 1 << 10})
	}()
	c := wire.NewClient(5 * time.Second)
	defer c.CloseIdleConnections()
	var resp *http.Response
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-done: // it will never listen: say why at once
			t.Fatalf("proxy stopped before serving: %v", err)
		default:
		}
		req, _ := http.NewRequest("POST", "http://"+listen+"/v1/refunds", strings.NewReader(`{"amount":1,"currency":"usd"}`))
		req.Header.Set("Authorization", "Bearer alice")
		req.Header.Set("Idempotency-Key", `"k1"`)
		if resp, err = c.Do(req); err == nil {
			resp.Body.Close()
			break
		}
	}
	if err != nil || resp.StatusCode != 503 || resp.Header.Get(chaos.FaultHeader) != "status" {
		t.Fatalf("through the proxy: %v %v, want the injected 503", resp, err)
	}
	// Without a fault the request reaches the upstream.
	req, _ := http.NewRequest("POST", "http://"+listen+"/v1/charges", strings.NewReader(`{"amount":1,"currency":"usd"}`))
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Idempotency-Key", `"k2"`)
	if resp, err = c.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("forwarded to %s: %v %v, want 201 from the upstream", upstream, resp, err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("proxy stopped with %v", err)
	}
	b, err := os.ReadFile(history)
	if err != nil || !bytes.Contains(b, []byte(`"key":"k1"`)) || !bytes.Contains(b, []byte(`"fault":"status"`)) {
		t.Errorf("history %q (%v): want the attempt of k1 under the status fault", b, err)
	}
}

// TestAnalyzeCLI: analyze judges only a history that holds something: an
// empty one and a torn last line exit 2 with one line; --skip-torn-tail
// skips the torn line with a warning and judges the rest.
func TestAnalyzeCLI(t *testing.T) {
	attempt := `{"type":"attempt","key":"k","attempt":1,"method":"POST","path":"/v1/charges","upstream":[{"status":201,"id":"x"}],"client":"ok","status":201}` + "\n"
	failedOps := `{"type":"attempt","key":"a","attempt":1,"method":"POST","path":"/v1/charges","upstream":[{"status":422}],"client":"ok","status":422}` + "\n" +
		`{"type":"op","key":"a","operation":"charges","kind":"normal","attempts":1,"outcome":"fail","status":422,"oracle":0}` + "\n" +
		`{"type":"op","key":"b","operation":"charges","kind":"normal","attempts":1,"outcome":"fail","status":422}` + "\n"
	for _, tc := range []struct {
		name, rule, history string
		args                []string
		code                int
		stderr              string
	}{
		{"empty", "an empty history is not OK", "", nil, exitUsage, "empty history"},
		{"torn", "a torn last line is named, with the flag that skips it", attempt + `{"type":"attem`, nil, exitUsage, "--skip-torn-tail"},
		{"torn skipped", "--skip-torn-tail warns and judges the rest", attempt + `{"type":"attem`, []string{"--skip-torn-tail"}, exitOK, "warning: "},
		{"clean", "a whole history is judged", attempt, nil, exitOK, ""},
		{"not exercised", "operations that all got a 4xx executed nothing: no violation proves nothing", failedOps, nil, exitIncomplete, "not exercised"},
		{"not exercised, accepted", "--allow-incomplete accepts a run that exercised nothing", failedOps, []string{"--allow-incomplete"}, exitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "h.jsonl", tc.history)
			r := runCLI(t, append([]string{"analyze", path}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
				t.Fatalf("rule: %s: exit %d (want %d), stderr %q (want one line with %q)\n%s", tc.rule, r.code, tc.code, r.stderr, tc.stderr, r.stdout)
			}
		})
	}
}

// TestChaosNotExercised: a chaos run whose operations the API all refuses
// (here a body that fails validation) would execute nothing: the normal
// request's check stops it before any traffic, naming the 400 (exit 4,
// which --allow-incomplete does not lift), instead of reporting
// exactly-once OK. A history that shows no execution still exits 5
// (TestAnalyzeCLI's "not exercised").
func TestChaosNotExercised(t *testing.T) {
	t.Setenv("IDEMCHECK_TOKEN", "alice")
	base := demotest.ServeOn(t, demotest.App(t, demo.Options{}), "127.0.0.1:0")
	cfg := writeTemp(t, "bad.yaml", strings.Replace(fmt.Sprintf(reachConfig, base, ""), "amount: 1000", `amount: "a lot"`, 1))
	for _, args := range [][]string{{"--ops", "20", "--fault", "drop-response:0.3"}, {"--ops", "5", "--allow-incomplete"}} {
		r := runCLI(t, append([]string{"chaos", "--config", cfg}, args...)...)
		if r.code != exitUnreachable || !strings.Contains(r.stderr, "/v1/charges answered 400 {") || strings.Contains(r.stdout, "exactly-once") {
			t.Fatalf("%v: exit %d, stderr %q: want %d naming the 400, no verdict\n%s", args, r.code, r.stderr, exitUnreachable, lastLines(r.stdout, 8))
		}
	}
}

// TestChaosLostByServer: lost stays for a server whose own answers to the
// retries after the commit are non-success. In front of the reference, a
// wrapper answers 500 to every POST of a key it has seen answered 2xx;
// the harness drops half of the answers. Keys whose first answer was
// dropped are lost by the server's 500s (exit 1), not excused.
func TestChaosLostByServer(t *testing.T) {
	base := wedgedHTTP(t)
	var out bytes.Buffer
	f := chaosFlags{sel: scenarios.Selection{Target: base}, faults: []string{"drop-response:0.5"},
		run: chaosRun{ops: 40, concurrency: 8, seed: 3, maxAttempts: 4, deadline: time.Minute}}
	err := runChaos(t.Context(), &out, f)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitFail || !strings.Contains(out.String(), "answered a retry sent after the commit with status 500") {
		t.Fatalf("%v: want exit 1 and lost by the server's 500\n%s", err, out.String())
	}
}

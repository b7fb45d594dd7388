package main

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

// serveNull starts the server every conformance gate must refuse: it
// ignores Idempotency-Key entirely and answers every POST 201
// {"status":"accepted"}; GET /_effects is a counter that never moves (an
// oracle pointed at the wrong thing). Plain net/http on loopback.
func serveNull(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"executions":0}`))
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"status":"accepted"}`))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String()
}

// TestNullServerNeverPasses: a server that ignores the key can never exit 0
// under a config that names an operation; whatever the config supplies,
// the run either catches it (1), says it lacks the evidence (5), or finds
// the evidence unusable before any verdict (2).
// --allow-incomplete is the user accepting that, explicitly.
func TestNullServerNeverPasses(t *testing.T) {
	url := serveNull(t)
	base := "base_url: " + url + "\nprincipals: [{name: a, headers: {X-Api-Key: k}}]\n"
	op := "operations: [{name: things, method: POST, path: /things, body: {a: 1}%s}]\n"
	for _, tc := range []struct {
		name, rule, config string
		args               []string
		codes              []int // acceptable exit codes
	}{
		{"bare", "no oracle, no id_pointer: the MUSTs that need one lack evidence, never a pass; the answers alone catch it (1): a 201 to a keyless request and to a changed body under a used key",
			base + strings.Replace(op, "%s", "", 1), nil, []int{exitFail}},
		{"id-pointer-finds-nothing", "an id_pointer that matches nothing in the body stops the run before any verdict: a config error (2), not a pass",
			base + strings.Replace(op, "%s", ", id_pointer: /id", 1), nil, []int{exitUsage}},
		{"oracle-never-moves", "an oracle whose counter never moves is misconfigured: not a pass",
			base + "oracle: {url: /_effects, pointer: /executions}\n" + strings.Replace(op, "%s", "", 1), nil, []int{exitFail, exitIncomplete}},
		{"allow-incomplete", "--allow-incomplete accepts missing evidence, not the failures the answers alone show (1)",
			base + strings.Replace(op, "%s", "", 1), []string{"--allow-incomplete"}, []int{exitFail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeTemp(t, "null.yaml", tc.config)
			r := runCLI(t, append([]string{"run", "--config", cfg}, tc.args...)...)
			ok := false
			for _, c := range tc.codes {
				ok = ok || r.code == c
			}
			if !ok {
				t.Fatalf("rule: %s: exit %d, want one of %v\nstdout:\n%s\nstderr:\n%s", tc.rule, r.code, tc.codes, r.stdout, r.stderr)
			}
			if r.code == exitUsage && r.stderr != "idemcheck: operations[0].id_pointer /id: nothing there in the 201 body (members: status)\n" {
				t.Errorf("rule: the id_pointer error is one line naming the pointer and the body's members; stderr:\n%s", r.stderr)
			}
			if r.code == exitIncomplete && (!strings.Contains(r.stdout, "Not enough evidence (MUST):") ||
				!strings.Contains(r.stdout, "outcome: not enough evidence (exit 5)") || !strings.Contains(r.stderr, "not enough evidence")) {
				t.Errorf("rule: exit 5 is explained in the report and on stderr\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			}
			if strings.Contains(tc.config, "oracle:") || strings.Contains(tc.config, "id_pointer") {
				t.Logf("exit %d; %s", r.code, lastLines(r.stdout, 5))
				return
			}
			// No oracle, no id: only the answers are evidence. A failure
			// is one they show (a success where the MUST says the request
			// fails); the cases that need to count a replay lack evidence.
			if want := "idemcheck: 3 failing: mismatch/repeat-fails-again@things: fail; missing/rejected@things: fail; missing/repeat-fails-again@things: fail\n"; r.stderr != want {
				t.Errorf("rule: only the answer-evidenced cases fail: stderr %q, want %q", r.stderr, want)
			}
			if !strings.Contains(r.stdout, "0 requirements verified") || !strings.Contains(r.stdout, "without evidence") {
				t.Errorf("rule: no MUST verified without evidence, the replay MUSTs listed without evidence:\n%s", r.stdout)
			}
			t.Logf("exit %d; %s", r.code, lastLines(r.stdout, 5))
		})
	}
}

// lastLines returns the last n lines of s, for logs.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

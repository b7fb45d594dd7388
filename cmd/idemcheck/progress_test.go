package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// progressLine matches each face's live line.
var progressLine = map[string]*regexp.Regexp{
	"run":   regexp.MustCompile(`run: \d+/\d+ instances, \d+ failing, (ETA \d|finishing)`),
	"chaos": regexp.MustCompile(`chaos: \d+/\d+ operations, \d+ faults injected, \d+ violations so far`),
	"load":  regexp.MustCompile(`load: \[1/1 \d+@\ds\] \d+s/\ds, \d+/\d+ requests, \d+/s achieved, p99 [0-9.]+[µm]?s, \d+ errors`),
}

// faceArgs are runs long enough (a few seconds) for progress to show.
func faceArgs(url string) map[string][]string {
	return map[string][]string{
		"run":   {"run", "--target", url, "--ttl", "3s"},
		"chaos": {"chaos", "--target", url, "--ops", "3000", "--fault", "drop-response:0.3"},
		"load":  {"load", "--target", url, "--rate", "300", "--duration", "4s"},
	}
}

// TestProgressOnTerminal runs each face in a tmux pane (a real terminal)
// and reads the live line off the screen while it runs.
func TestProgressOnTerminal(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no tmux under CI: .ci/run installs it")
		}
		t.Skip("no tmux on PATH: the terminal progress line is not checked")
	}
	bin := testenv.BuildIdemcheck(t)
	url := demotest.Serve(t, demo.Options{TTL: 3 * time.Second})
	for _, face := range []string{"run", "chaos", "load"} {
		t.Run(face, func(t *testing.T) {
			// A tmux server of its own: a server exits with its last
			// session, which would race the next face's start.
			socket := fmt.Sprintf("idemcheck-test-%d-%s", os.Getpid(), face)
			tm := func(args ...string) (string, error) {
				out, err := exec.Command(tmux, append([]string{"-L", socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
				return string(out), err
			}
			defer tm("kill-server")
			session := "p-" + face
			cmdline := shellJoin(append([]string{bin}, faceArgs(url)[face]...)) + "; sleep 60"
			if out, err := tm("new-session", "-d", "-s", session, "-x", "220", "-y", "50", cmdline); err != nil {
				t.Fatalf("tmux new-session: %v: %s", err, out)
			}
			deadline := time.Now().Add(30 * time.Second)
			var screen string
			for time.Now().Before(deadline) {
				screen, _ = tm("capture-pane", "-p", "-t", session)
				if progressLine[face].MatchString(screen) {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Fatalf("no %s progress line on the terminal within 30s:\n%s", face, screen)
		})
	}
}

// TestProgressOffInLogs: with stdout not a terminal (CI logs) nothing of
// the progress line is written; -v prints it as plain lines.
func TestProgressOffInLogs(t *testing.T) {
	url := demotest.Serve(t, demo.Options{})
	for _, face := range []string{"run", "chaos", "load"} {
		args := faceArgs(url)[face]
		if face == "run" {
			args = []string{"run", "--target", url, "--run", "replay/**"}
		}
		if face == "chaos" {
			args = []string{"chaos", "--target", url, "--ops", "50"}
		}
		if face == "load" {
			args = []string{"load", "--target", url, "--rate", "50", "--duration", "1s"}
		}
		quiet := runCLI(t, args...)
		if strings.Contains(quiet.stderr, face+": ") || strings.Contains(quiet.stderr, "\033[K") {
			t.Errorf("%s without a terminal printed progress:\n%s", face, quiet.stderr)
		}
		loud := runCLI(t, append(args, "-v")...)
		if !progressLine[face].MatchString(loud.stderr) {
			t.Errorf("%s -v printed no progress line:\n%s", face, loud.stderr)
		}
		if strings.Contains(loud.stderr, "\033[K") {
			t.Errorf("%s -v into a log redraws in place:\n%q", face, loud.stderr)
		}
	}
}

// shellJoin quotes args for sh -c.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/testenv"
)

// gettingStartedBlock is the first sh block of docs/getting-started.md.
var gettingStartedBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// TestGettingStarted runs the commands of docs/getting-started.md in
// order, as written, in a fresh directory: the `serve &` line starts the
// reference on a free port (which replaces 127.0.0.1:8080 in every line),
// `export` lines set the environment, and each idemcheck command must exit
// 0; the CI gate writes its JUnit file and Markdown summary.
func TestGettingStarted(t *testing.T) {
	doc, err := os.ReadFile("../../docs/getting-started.md")
	if err != nil {
		t.Fatal(err)
	}
	m := gettingStartedBlock.FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/getting-started.md has no sh block")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := strings.TrimPrefix(closedPort(t), "http://")
	summary := filepath.Join(dir, "summary.md")
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	bin := testenv.BuildIdemcheck(t)
	commands := 0
	for _, line := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(strings.ReplaceAll(line, "127.0.0.1:8080", addr))
		line = strings.ReplaceAll(line, " examples/", " "+repo+"/examples/")
		if rest, ok := strings.CutPrefix(line, "export "); ok {
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			commands++
			continue
		}
		background := strings.HasSuffix(line, "&")
		words, err := apispec.SplitCommand(os.ExpandEnv(strings.TrimSuffix(line, "&")))
		if err != nil || len(words) == 0 || words[0] != "idemcheck" {
			t.Fatalf("line %q: not an idemcheck command (%v)", line, err)
		}
		cmd := exec.Command(bin, words[1:]...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if background {
			startBackground(t, cmd, "http://"+addr)
			continue
		}
		commands++
		if err := cmd.Run(); err != nil {
			t.Fatalf("rule: every command of the guide succeeds: %q: %v\n%s", line, err, tail(out.String(), 30))
		}
	}
	if commands != 5 {
		t.Errorf("the guide promises five commands; its block has %d", commands)
	}
	for _, f := range []string{"idemcheck.yaml", "idemcheck.xml", "summary.md"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}

// startBackground starts cmd (a server) and waits until base answers; it
// is stopped when the test ends.
func startBackground(t *testing.T, cmd *exec.Cmd, base string) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not answer within 15s", base)
}

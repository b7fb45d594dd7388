package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/testenv"
)

// exitComment is the exit code a comment line of the root help promises
// for the commands under it.
var exitComment = regexp.MustCompile(`: exit (\d+)$`)

// TestRootHelpExamples: every command `idemcheck --help` prints runs as
// printed, in order, in a fresh directory, and exits as the comment above
// it says. The `serve … &` line starts the reference on a free port, which
// replaces 127.0.0.1:8080 in every line and in every examples/ file a line
// names (a copy is used).
func TestRootHelpExamples(t *testing.T) {
	help := runCLI(t, "--help")
	_, examples, ok := strings.Cut(help.stdout, "\nExamples:\n")
	if help.code != exitOK || !ok {
		t.Fatalf("--help: exit %d, no Examples:\n%s", help.code, help.stdout)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := strings.TrimPrefix(closedPort(t), "http://")
	bin := testenv.BuildIdemcheck(t)
	want, ran := -1, 0
	for _, line := range strings.Split(strings.TrimSpace(examples), "\n") {
		line = strings.TrimSpace(line)
		if text, ok := strings.CutPrefix(line, "#"); ok {
			if m := exitComment.FindStringSubmatch(strings.TrimSpace(text)); m != nil {
				want, _ = strconv.Atoi(m[1])
			}
			continue
		}
		background := strings.HasSuffix(line, "&")
		words, err := apispec.SplitCommand(strings.ReplaceAll(strings.TrimSuffix(line, "&"), "127.0.0.1:8080", addr))
		if err != nil || len(words) == 0 || words[0] != "idemcheck" {
			t.Fatalf("%q: not an idemcheck command (%v)", line, err)
		}
		for i, w := range words {
			if strings.HasPrefix(w, "examples/") {
				words[i] = localCopy(t, filepath.Join(repo, w), dir, addr)
			}
		}
		cmd := exec.Command(bin, words[1:]...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if background {
			startBackground(t, cmd, "http://"+addr)
			continue
		}
		if want < 0 {
			t.Errorf("rule: each example's comment says how it exits (\": exit N\"); none above %q", line)
			continue
		}
		ran++
		code := 0
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		if code != want {
			t.Errorf("rule: the root help's examples exit as their comments say: %q exited %d, want %d\n%s", line, code, want, tail(out.String(), 20))
		}
	}
	if ran < 4 {
		t.Errorf("ran %d commands of the root help; it shows init, run, chaos and load", ran)
	}
}

// localCopy is path, or a copy of it in dir aimed at addr when it names
// the reference's 127.0.0.1:8080.
func localCopy(t *testing.T, path, dir, addr string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("127.0.0.1:8080")) {
		return path
	}
	p := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(p, bytes.ReplaceAll(b, []byte("127.0.0.1:8080"), []byte(addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

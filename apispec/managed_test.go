package apispec

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSplitCommand(t *testing.T) {
	rows := []struct {
		in, explain string
		want        []string
		err         string
	}{
		{`serve --addr 127.0.0.1:{port}`, "blanks separate words", []string{"serve", "--addr", "127.0.0.1:{port}"}, ""},
		{`a  'b c'  "d \"e\" \$f"`, "quotes group words; double quotes honour escapes", []string{"a", "b c", `d "e" $f`}, ""},
		{`a\ b 'x'"y"z`, "a backslash escapes a blank; adjacent quoted parts join", []string{"a b", "xyz"}, ""},
		{`a ''`, "an empty quoted word is a word", []string{"a", ""}, ""},
		{`a 'b`, "an open single quote is an error", nil, "unterminated single quote"},
		{`a "b`, "an open double quote is an error", nil, "unterminated double quote"},
		{`a \`, "a trailing backslash is an error", nil, "trailing backslash"},
		{"  ", "blanks only is no command", nil, "empty command"},
	}
	for _, r := range rows {
		got, err := SplitCommand(r.in)
		if (err == nil) != (r.err == "") || (err != nil && err.Error() != r.err) || !slices.Equal(got, r.want) {
			t.Errorf("%s: SplitCommand(%q) = %q, %v; want %q, %q", r.explain, r.in, got, err, r.want, r.err)
		}
	}
}

// A process that starts but never answers HTTP is an unreachable target,
// reported within the readiness bound and then stopped.
func TestManagedNeverReady(t *testing.T) {
	defer func(d time.Duration) { managedReadyTimeout = d }(managedReadyTimeout)
	managedReadyTimeout = 300 * time.Millisecond
	tg, err := FromCommand("sleep 30", 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, m, err := StartManaged(context.Background(), tg, "")
	if m != nil || !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "did not answer HTTP") {
		t.Fatalf("StartManaged(sleep) = %v, %v; want ErrUnreachable naming the wait", m, err)
	}
	if d := time.Since(start); d > managedReadyTimeout+managedStopGrace+2*time.Second {
		t.Fatalf("gave up after %s", d)
	}
}

// A process that exits before answering is reported with its exit status
// and last output line.
func TestManagedExitsEarly(t *testing.T) {
	tg, err := FromCommand(`sh -c "echo listening on nothing >&2; exit 3"`, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = StartManaged(context.Background(), tg, "")
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "last output: listening on nothing") {
		t.Fatalf("StartManaged(exit 3) = %v; want the exit status and last output", err)
	}
}

func TestTailBufferKeepsTheTail(t *testing.T) {
	b := &tailBuffer{max: 8}
	for _, s := range []string{"abc", "defgh", "ijkl"} {
		_, _ = b.Write([]byte(s))
	}
	if got := b.String(); got != "efghijkl" {
		t.Fatalf("tail = %q, want %q", got, "efghijkl")
	}
}

// target_cmd in YAML: base_url may be left out or name {port}; a command
// line that does not split is an error naming the field; the crash case is
// supplied only with a command.
func TestConfigTargetCmd(t *testing.T) {
	raw, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := regexp.MustCompile(`(?m)^base_url:.*$`)
	rows := []struct {
		name, replace, err string
		supplied           bool
	}{
		{"no command", "base_url: http://127.0.0.1:8080", "", false},
		{"command, no base_url", "target_cmd: ./server --port {port}", "", true},
		{"command and {port} base_url", "target_cmd: ./server --port {port}\nbase_url: http://127.0.0.1:{port}/api", "", true},
		{"{port} without a command", "base_url: http://127.0.0.1:{port}", `base_url "http://127.0.0.1:{port}"`, false},
		{"unsplittable command", `target_cmd: "./server 'x"`, `target_cmd "./server 'x": unterminated single quote`, false},
	}
	for _, r := range rows {
		tg, _, err := ParseConfig(base.ReplaceAll(raw, []byte(r.replace)))
		if r.err != "" {
			if err == nil || !strings.Contains(err.Error(), r.err) {
				t.Errorf("%s: error %v, want %q", r.name, err, r.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", r.name, err)
			continue
		}
		if (tg.Command != "") != r.supplied {
			t.Errorf("%s: a target command = %v", r.name, !r.supplied)
		}
	}
}

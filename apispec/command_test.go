package apispec

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
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

// --target-cmd beside a config: the file's base_url may name {port},
// which it could not without a command.
func TestFileCommandFromFlag(t *testing.T) {
	f := &File{Path: "c.yaml", Raw: []byte("base_url: http://127.0.0.1:{port}\nprincipals: [{name: a}]\noperations: [{name: o, method: POST, path: /o}]\n")}
	if _, _, err := f.Load("", ""); err == nil || !strings.Contains(err.Error(), "{port}") {
		t.Errorf("{port} without a command: %v", err)
	}
	f.Command = "serve --addr 127.0.0.1:{port}"
	tg, _, err := f.Load("", "")
	if err != nil || tg.Command != f.Command {
		t.Errorf("{port} with --target-cmd: %v, command %q", err, tg.Command)
	}
}

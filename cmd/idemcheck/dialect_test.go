package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// TestDeprecatedFormat: run and list share one --format vocabulary (text,
// json); run's old word console still works, with one line on stderr, so
// CI scripts written against it do not break.
func TestDeprecatedFormat(t *testing.T) {
	url := demotest.Serve(t, demo.Options{TTL: 2 * time.Second})
	for _, tc := range []struct {
		name, rule string
		args       []string
		code       int
		stdout     string
		stderr     string // one line, or empty
	}{
		{"run-console", "run's old word is an alias of text, with a note",
			[]string{"run", "--target", url, "--run", "replay/same-status", "--format", "console"}, 0, " 0 failed, ", "--format console is deprecated, use --format text"},
		{"run-text", "run takes list's word text, silently",
			[]string{"run", "--target", url, "--run", "replay/same-status", "--format", "text"}, 0, " 0 failed, ", ""},
		{"list-console", "list takes the alias too (one vocabulary)",
			[]string{"list", "--run", "replay/same-status", "--format", "console"}, 0, "2 case instances", "--format console is deprecated, use --format text"},
		{"list-bad", "an unknown word is one line naming the flag and the words, exit 2",
			[]string{"list", "--format", "yaml"}, 2, "", `idemcheck: --format "yaml": want text or json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			stderr := strings.TrimSpace(r.stderr)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) ||
				(tc.stderr == "") != (stderr == "") || strings.Contains(stderr, "\n") {
				t.Fatalf("rule: %s: exit %d (want %d), stderr %q (want one line with %q), stdout:\n%s", tc.rule, r.code, tc.code, r.stderr, tc.stderr, r.stdout)
			}
		})
	}
}

// TestSeedNegative: --seed is a uint64 on every command; a negative one is
// refused at parse time, before any traffic, with one line naming flag and
// value (not strconv's wording), exit 2.
func TestSeedNegative(t *testing.T) {
	down := closedPort(t)
	for _, args := range [][]string{
		{"run", "--target", down, "--seed", "-1"},
		{"chaos", "--target", down, "--seed", "-1"},
		{"proxy", "--upstream", down, "--seed", "-1"},
	} {
		r := runCLI(t, args...)
		stderr := strings.TrimSpace(r.stderr)
		if r.code != exitUsage || stderr != `idemcheck: --seed "-1": want a whole number, 0 or more` {
			t.Errorf("%s: exit %d, stderr %q: want exit 2 and one line naming --seed", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}

// TestSwitchValue: a switch given a value that is not a truth value is
// named with what it wants (strconv.ParseBool fails with a NumError too;
// it read "want a number").
func TestSwitchValue(t *testing.T) {
	r := runCLI(t, "chaos", "--target", closedPort(t), "--allow-incomplete=maybe")
	if stderr := strings.TrimSpace(r.stderr); r.code != exitUsage || stderr != `idemcheck: --allow-incomplete "maybe": want true or false` {
		t.Errorf("exit %d, stderr %q: want exit 2 and one line naming --allow-incomplete", r.code, r.stderr)
	}
}

// TestAnalyzeJSONFile: analyze --json takes a FILE like every other --json
// (the summary still prints); "-" puts the JSON alone on stdout; the old
// bare switch is a usage error, not a silent text run.
func TestAnalyzeJSONFile(t *testing.T) {
	attempt := `{"type":"attempt","key":"k","attempt":1,"method":"POST","path":"/v1/charges","upstream":[{"status":201,"id":"x"}],"client":"ok","status":201}` + "\n"
	history := writeTemp(t, "h.jsonl", attempt)
	out := filepath.Join(t.TempDir(), "report.json")
	var rep struct {
		Keys int `json:"keys"`
	}

	r := runCLI(t, "analyze", history, "--json", out)
	b, err := os.ReadFile(out)
	if r.code != 0 || !strings.Contains(r.stdout, "exactly-once: OK") || err != nil || json.Unmarshal(b, &rep) != nil || rep.Keys != 1 {
		t.Errorf("--json FILE: exit %d, stdout %q, file %q (%v): want the summary on stdout and the report in the file", r.code, r.stdout, b, err)
	}

	r = runCLI(t, "analyze", history, "--json", "-")
	if rep.Keys = 0; r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || rep.Keys != 1 {
		t.Errorf("--json -: exit %d, stdout %q: want the JSON report alone", r.code, r.stdout)
	}

	r = runCLI(t, "analyze", history, "--json")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--json") {
		t.Errorf("bare --json: exit %d, stderr %q: want exit 2 naming --json", r.code, r.stderr)
	}
}

// TestDefectList: serve --defect repeats like every other repeatable flag,
// and the comma form (the old one) still works, alone or mixed.
func TestDefectList(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		args       []string
		want       []string
	}{
		{"repeated", "each --defect adds one", []string{"no-expiry", "no-fingerprint"}, []string{"no-expiry", "no-fingerprint"}},
		{"comma", "a comma-separated value adds each", []string{"no-expiry, no-fingerprint"}, []string{"no-expiry", "no-fingerprint"}},
		{"mixed", "both forms together", []string{"no-expiry,no-fingerprint", "no-inflight-lock"}, []string{"no-expiry", "no-fingerprint", "no-inflight-lock"}},
		{"blank", "empty items are ignored", []string{",", ""}, nil},
	} {
		got, err := defectList(tc.args)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: rule: %s: %q (%v), want %q", tc.name, tc.rule, got, err, tc.want)
		}
	}
}

// commands lists every command of the tree but cobra's own (help and
// completion, which cobra adds and documents), each with its path's words.
func commands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		if sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		out = append(out, commands(sub)...)
	}
	return out
}

// TestDialect walks every command and holds the CLI to one dialect: an
// Example section, --json always takes a FILE, --seed one type, --format
// one vocabulary, repeatable flags repeat the same way, and help that
// shows words, not Go values.
func TestDialect(t *testing.T) {
	cmds := commands(rootCmd)
	if len(cmds) < 10 {
		t.Fatalf("walked %d commands, want root, run, list, serve, proxy, chaos, analyze, load, load report, version", len(cmds))
	}
	for _, c := range cmds {
		t.Run(strings.ReplaceAll(c.CommandPath(), " ", "_"), func(t *testing.T) {
			if !strings.Contains(c.Example, "idemcheck ") {
				t.Errorf("rule: every command shows how it is used: no Example")
			}
			c.LocalFlags().VisitAll(func(f *pflag.Flag) {
				switch f.Name {
				case "json":
					if f.Value.Type() != "string" || f.NoOptDefVal != "" {
						t.Errorf("rule: --json takes a FILE everywhere: type %s, no-option default %q", f.Value.Type(), f.NoOptDefVal)
					}
					if name, _ := pflag.UnquoteUsage(f); name != "FILE" {
						t.Errorf("rule: help names --json's value FILE: %q", name)
					}
				case "seed":
					if f.Value.Type() != "uint64" {
						t.Errorf("rule: --seed is uint64 everywhere: %s", f.Value.Type())
					}
				case "format":
					if f.Value.Type() != "text|json" || f.DefValue != "text" {
						t.Errorf("rule: --format takes text|json, default text: %s, default %q", f.Value.Type(), f.DefValue)
					}
				}
				if strings.HasSuffix(f.Value.Type(), "Slice") || f.Value.Type() == "strings" {
					t.Errorf("rule: repeatable flags repeat (stringArray), commas are split where documented: --%s is %s", f.Name, f.Value.Type())
				}
			})
			args := append(strings.Fields(c.CommandPath())[1:], "--help")
			r := runCLI(t, args...)
			if r.code != 0 || !strings.Contains(r.stdout, "Examples:") {
				t.Fatalf("%s: exit %d, no Examples section:\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
			}
			if _, last, _ := strings.Cut(r.stdout, "\nExamples:\n"); strings.Contains(last, "\n\n") {
				t.Errorf("rule: every --help ends with its examples (README); %s has more after them:\n%s", strings.Join(args, " "), last)
			}
			for _, goValue := range []string{"map[", ": [", "=["} {
				if strings.Contains(r.stdout, goValue) {
					t.Errorf("rule: help shows words, not Go values: %q in\n%s", goValue, r.stdout)
				}
			}
		})
	}
}

// TestExamples: every Example line is a command that parses: the command
// exists, each flag exists and takes its value (the binary parses them
// with --help appended, which stops before running), the positional
// arguments are what the command accepts, and files under examples/ exist.
func TestExamples(t *testing.T) {
	for _, c := range commands(rootCmd) {
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line), "&"))
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			words := shellWords(t, line)
			if words[0] != "idemcheck" {
				t.Errorf("%s: example %q does not start with idemcheck", c.CommandPath(), line)
				continue
			}
			args := words[1:]
			sub, rest, err := rootCmd.Find(args)
			if err != nil || sub == rootCmd {
				t.Errorf("%s: example %q: no such command (%v)", c.CommandPath(), line, err)
				continue
			}
			// Past "--" the words are a command of the user's (idemcheck
			// client -- COMMAND): neither flags nor arguments of ours.
			if i := slices.Index(rest, "--"); i >= 0 {
				rest = rest[:i]
			}
			if i := slices.Index(args, "--"); i >= 0 {
				args = args[:i]
			}
			var positional []string
			for i := 0; i < len(rest); i++ {
				w := rest[i]
				if !strings.HasPrefix(w, "-") || w == "-" {
					positional = append(positional, w)
					continue
				}
				name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
				f := sub.Flags().Lookup(name)
				if f == nil && !strings.HasPrefix(w, "--") {
					f = sub.Flags().ShorthandLookup(name)
				}
				if f == nil {
					t.Errorf("%s: example %q: no flag %s", c.CommandPath(), line, w)
					break
				}
				if !hasValue && f.NoOptDefVal == "" {
					i++ // the flag's value
				}
			}
			if err := sub.ValidateArgs(positional); err != nil {
				t.Errorf("%s: example %q: arguments %q: %v", c.CommandPath(), line, positional, err)
			}
			for _, w := range words {
				if strings.HasPrefix(w, "examples/") {
					if _, err := os.Stat(filepath.Join("../..", w)); err != nil {
						t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
					}
				}
			}
			if r := runCLI(t, append(args, "--help")...); r.code != 0 {
				t.Errorf("%s: example %q does not parse: exit %d: %s", c.CommandPath(), line, r.code, r.stderr)
			}
		}
	}
}

// shellWords splits an example line as sh would for the quoting examples
// use: spaces separate, '...' and "..." group.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unclosed quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestNegativeClock: a negative --ttl or --lease is named alone (a
// negative --ttl named "--lease 0s", a flag not given).
func TestNegativeClock(t *testing.T) {
	down := closedPort(t)
	for flag, want := range map[string]string{
		"--ttl":   "idemcheck: --ttl -2s: must not be negative",
		"--lease": "idemcheck: --lease -2s: must not be negative",
	} {
		r := runCLI(t, "run", "--target", down, flag, "-2s")
		if stderr := strings.TrimSpace(r.stderr); r.code != exitUsage || stderr != want {
			t.Errorf("run %s -2s: exit %d, stderr %q: want exit 2 and %q", flag, r.code, r.stderr, want)
		}
	}
}

// TestAttemptsFlag: --attempts below 1 is a usage error naming the value.
func TestAttemptsFlag(t *testing.T) {
	down := closedPort(t)
	for _, n := range []string{"0", "-1"} {
		r := runCLI(t, "run", "--target", down, "--attempts", n)
		want := "idemcheck: --attempts " + n + ": want 1 or more (1: a missed timing is not tried again)"
		if stderr := strings.TrimSpace(r.stderr); r.code != exitUsage || stderr != want {
			t.Errorf("run --attempts %s: exit %d, stderr %q: want exit 2 and %q", n, r.code, r.stderr, want)
		}
	}
}

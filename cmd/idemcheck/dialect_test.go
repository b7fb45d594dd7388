package main

import (
	"strings"
	"testing"
	"time"

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
			[]string{"list", "--format", "yaml"}, 2, "", `invalid argument "yaml" for "--format" flag: want text or json`},
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

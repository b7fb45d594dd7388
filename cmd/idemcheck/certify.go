package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

// What run records and repeats for certification (docs/certify.md): the
// command line, the config's digest, the attestation.

// envPlaceholder is a ${NAME} in a recorded command line.
var envPlaceholder = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// recordedCommand is argv as a report records it: secrets the target knows
// replaced by their ${NAME}, each word shell-quoted.
func recordedCommand(t *apispec.Target, argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		if i < 2 {
			words[i] = w
			continue
		}
		w = t.Redact(w)
		if !bareWord.MatchString(w) {
			w = wire.ShellWord(w)
		}
		words[i] = w
	}
	return strings.Join(words, " ")
}

// bareWord needs no shell quoting.
var bareWord = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// configResource cites the config file by path and the SHA-256 of its
// redacted content (nil: no config).
func configResource(path string) (*scenarios.Resource, error) {
	if path == "" {
		return nil, nil
	}
	f, err := apispec.ReadFile(path)
	if err != nil {
		return nil, err
	}
	red, err := f.Redacted()
	if err != nil {
		return nil, err
	}
	return &scenarios.Resource{Path: path, SHA256: reports.SHA256(red)}, nil
}

// readReport reads a JSON report named by flag.
func readReport(flag, path string) (*scenarios.Report, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", flag, err)
	}
	rep, err := reports.ReadJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", flag, path, err)
	}
	return rep, nil
}

// replayFlags are the flags of the run f.replayOf recorded (selection,
// profile, seed, globs, TTL...), with f's outputs and, when f names one,
// f's config; argv is the replay's own command line. The config's digest
// is checked against the report's by sameConfig once it is read.
func replayFlags(f runFlags) (runFlags, []string, error) {
	rep, err := readReport("--replay-of", f.replayOf)
	if err != nil {
		return f, nil, err
	}
	words, err := apispec.SplitCommand(rep.Command)
	if err != nil || len(words) < 2 || words[1] != "run" {
		return f, nil, fmt.Errorf("--replay-of %s: the report records no run command line (%q)", f.replayOf, rep.Command)
	}
	for i, w := range words {
		var unset string
		words[i] = envPlaceholder.ReplaceAllStringFunc(w, func(ref string) string {
			v, ok := os.LookupEnv(ref[2 : len(ref)-1])
			if !ok && unset == "" {
				unset = ref
			}
			return v
		})
		if unset != "" {
			return f, nil, fmt.Errorf("--replay-of %s: %s is not set in the environment", f.replayOf, unset)
		}
	}
	var r runFlags
	c := &cobra.Command{Use: "run"}
	bindRunFlags(c, &r)
	if err := c.Flags().Parse(words[2:]); err != nil {
		return f, nil, fmt.Errorf("--replay-of %s: recorded command line: %v", f.replayOf, err)
	}
	if f.sel.Config != "" {
		if err := c.Flags().Set("config", f.sel.Config); err != nil {
			return f, nil, err
		}
	}
	var argv []string // what runs, without the recorded run's outputs
	recorded := commandLine(c)
	for i := 0; i < len(recorded); i++ {
		name, _, withValue := strings.Cut(strings.TrimPrefix(recorded[i], "--"), "=")
		n := 1
		if i >= 2 && !withValue {
			n = 2 // commandLine writes "--name value" for every non-bool flag
		}
		if !outputFlags[name] {
			argv = append(argv, recorded[i:i+n]...)
		}
		i += n - 1
	}
	r.junit, r.json, r.markdown, r.html, r.format, r.verbose = f.junit, f.json, f.markdown, f.html, f.format, f.verbose
	r.attest, r.subjects, r.badge, r.expect, r.replayOf = f.attest, f.subjects, f.badge, f.expect, f.replayOf
	r.replayConfig = rep.Config
	return r, argv, nil
}

// sameConfig refuses a replay whose config is not the one the report ran
// with (compared by redacted digest).
func sameConfig(f runFlags, got *scenarios.Resource) error {
	want := f.replayConfig
	switch {
	case want == nil && got == nil:
		return nil
	case want == nil:
		return fmt.Errorf("--replay-of %s: the report ran without a config, this run reads %s", f.replayOf, got.Path)
	case got == nil:
		return fmt.Errorf("--replay-of %s: the report ran with config %s, this run has none", f.replayOf, want.Path)
	case want.SHA256 != got.SHA256:
		return fmt.Errorf("--replay-of %s: config %s has digest sha256:%s, the report's %s had sha256:%s", f.replayOf, got.Path, got.SHA256, want.Path, want.SHA256)
	}
	return nil
}

// parseSubjects reads --subject NAME=sha256:HEX values.
func parseSubjects(values []string) ([]reports.Subject, error) {
	var out []reports.Subject
	for _, v := range values {
		name, digest, ok := strings.Cut(v, "=")
		hexDigest, isSHA := strings.CutPrefix(digest, "sha256:")
		if b, err := hex.DecodeString(hexDigest); !ok || name == "" || !isSHA || err != nil || len(b) != 32 {
			return nil, fmt.Errorf("--subject %q: want NAME=sha256:HEX (64 hex digits)", v)
		}
		out = append(out, reports.Subject{Name: name, SHA256: strings.ToLower(hexDigest)})
	}
	return out, nil
}

// writeAttestation writes --attest, citing the JSON report written beside
// it (by digest) and the CI run when GitHub Actions' variables name one.
func writeAttestation(f runFlags, rep *scenarios.Report, profile *apispec.Profile, subjects []reports.Subject) error {
	o := reports.AttestOptions{Tool: toolInfo(), Subjects: subjects, Profile: profile}
	if f.json != "" {
		raw, err := os.ReadFile(f.json)
		if err != nil {
			return fmt.Errorf("--attest: %v", err)
		}
		o.Report = &scenarios.Resource{Path: f.json, SHA256: reports.SHA256(raw)}
	}
	if server, repo, id := os.Getenv("GITHUB_SERVER_URL"), os.Getenv("GITHUB_REPOSITORY"), os.Getenv("GITHUB_RUN_ID"); server != "" && repo != "" && id != "" {
		o.URL = server + "/" + repo + "/actions/runs/" + id
	}
	return writeReport(f.attest, rep, func(w io.Writer, rep *scenarios.Report) error { return reports.Attest(w, rep, o) })
}

package main

import (
	"strings"
	"testing"
	"unicode"
)

// TestVerifyWrongFile: verify on a file that is not an attestation is a
// usage error (2) in one printable line, never the raw byte the JSON
// parser quotes; on a JSON report it says to pass the report as --report.
func TestVerifyWrongFile(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{"random bytes", "\x00\xff\x1b[31m\xfe", "not JSON"},
		{"a JSON report", `{"schema": "idemcheck.report/v1", "results": []}`, "as --report"},
	} {
		r := runCLI(t, "verify", writeTemp(t, "file", tc.content))
		msg := strings.TrimSpace(r.stderr)
		if r.code != exitUsage || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") ||
			strings.ContainsFunc(msg, func(r rune) bool { return !unicode.IsPrint(r) || r == unicode.ReplacementChar }) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one printable line with %q", tc.name, r.code, r.stderr, tc.want)
		}
	}
}

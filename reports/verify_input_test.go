package reports

import (
	"strings"
	"testing"
	"unicode"
)

// TestVerifyWrongFile: a file that is not an attestation is one printable
// line saying what it is (never the raw byte the JSON parser quotes); a
// JSON report given in the attestation's place says to pass it as
// --report. A missing revision is no mismatch; ToolRevision says it is
// missing, for the CLI's note.
func TestVerifyWrongFile(t *testing.T) {
	att, report := attestation(t, catalogReport(nil))
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"binary", []byte{0x00, 0xff, 0xfe, 0x1b, 'x'}, "not JSON"},
		{"text", []byte("# README\n"), "not JSON"},
		{"a report", report, "as --report"},
		{"other JSON", []byte(`{"_type":"x"}`), "in-toto statement"},
	} {
		_, err := Verify(VerifyInput{Attestation: tc.raw})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
			continue
		}
		if msg := err.Error(); strings.ContainsFunc(msg, func(r rune) bool { return !unicode.IsPrint(r) || r == unicode.ReplacementChar }) {
			t.Errorf("%s: rule: a printable line: %q", tc.name, msg)
		}
	}
	a, err := ReadAttestation(att)
	if err != nil || a.ToolRevision() != strings.Repeat("ab", 20) {
		t.Fatalf("revision %v %v", a, err)
	}
	bare := []byte(strings.Replace(string(att), `"revision": "`+strings.Repeat("ab", 20)+`"`, `"revision": ""`, 1))
	if a, err := ReadAttestation(bare); err != nil || a.ToolRevision() != "" {
		t.Errorf("an attestation without revision: %v", err)
	}
}

package words

import (
	"bytes"
	"testing"
	"time"
)

// TestWords: a tally is sorted words and numbers (never Go's map[k:v]),
// none when empty; a length is rounded to the millisecond; the JSON form
// is indented and ends its line.
func TestWords(t *testing.T) {
	if got := Counts(map[string]int{"duplicate": 74, "drop-response": 239}); got != "drop-response 239, duplicate 74" {
		t.Errorf("Counts: %q", got)
	}
	if got := Counts(map[string]uint64{}); got != "none" {
		t.Errorf("an empty tally: %q, want none", got)
	}
	if got := Duration(1234567 * time.Microsecond); got != "1.235s" {
		t.Errorf("Duration: %q", got)
	}
	var b bytes.Buffer
	if err := JSON(&b, map[string]int{"a": 1}); err != nil || b.String() != "{\n  \"a\": 1\n}\n" {
		t.Errorf("JSON: %q (%v)", b.String(), err)
	}
}

package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestLine: off without a terminal unless verbose; in a log the line is
// plain text (no redraw codes) and its final state is printed at Stop; a
// nil Line is safe to use. The terminal path is checked on a real
// terminal by cmd/idemcheck's TestProgressOnTerminal (tmux).
func TestLine(t *testing.T) {
	var log bytes.Buffer
	if l := Start(&log, &log, false, func() string { return "x" }); l != nil {
		t.Fatal("rule: stdout not a terminal and no -v: progress is off")
	}
	var nilLine *Line
	nilLine.Println("ignored")
	nilLine.Stop()

	n := 0
	l := Start(&log, &log, true, func() string { n++; return "state " + strings.Repeat("!", n) })
	l.Println("a result")
	l.Stop()
	out := log.String()
	for _, tc := range []struct{ rule, want string }{
		{"lines of their own are printed", "a result\n"},
		{"the final state is printed at Stop", "state !"},
	} {
		if !strings.Contains(out, tc.want) {
			t.Errorf("rule: %s: %q", tc.rule, out)
		}
	}
	if strings.Contains(out, "\r") || strings.Contains(out, "\033[") {
		t.Errorf("rule: a log gets no terminal codes: %q", out)
	}
	if ETA(0) != "finishing" || ETA(2400*time.Millisecond) != "ETA 2s" {
		t.Errorf("ETA: %q, %q", ETA(0), ETA(2400*time.Millisecond))
	}
}

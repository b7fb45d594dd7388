package scenarios

import (
	"strings"
	"testing"
)

// TestGlobWarnings: a --run or --skip glob that matches no case instance
// is one line naming close matches ('**@refunds', the old glob form,
// skipped nothing, silently); globs that match say nothing.
func TestGlobWarnings(t *testing.T) {
	tg, err := FromURL("http://127.0.0.1:1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		run, skip []string
		want      []string // one warning per entry, containing it; nil: none
	}{
		{skip: []string{"**@refunds"}, want: []string{`--skip '**@refunds' matches no case (did you mean '**/*@refunds'?)`}},
		{skip: []string{"**/*@refunds", "replay/**"}},
		{run: []string{"replay/same-statsu"}, want: []string{`--run 'replay/same-statsu' matches no case (did you mean 'replay/same-status'?)`}},
		{run: []string{"replay", "scope/**"}, want: []string{`--run 'replay' matches no case (did you mean 'replay/**'?)`}},
		{skip: []string{"nothing-like-it/at-all"}, want: []string{`--skip 'nothing-like-it/at-all' matches no case`}},
	} {
		got := GlobWarnings(tg, RunOptions{Run: tc.run, Skip: tc.skip})
		if len(got) != len(tc.want) {
			t.Errorf("run %q skip %q: %q, want %d warnings", tc.run, tc.skip, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) || strings.Contains(got[i], "\n") {
				t.Errorf("run %q skip %q: %q, want one line containing %q", tc.run, tc.skip, got[i], w)
			}
		}
	}
}

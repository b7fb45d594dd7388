package scenarios

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
)

// TestGlobWarnings: a --run or --skip glob that matches no case instance
// is one line naming close matches ('**@refunds', the old glob form,
// skipped nothing, silently); globs that match say nothing.
func TestGlobWarnings(t *testing.T) {
	tg, err := apispec.FromURL("http://127.0.0.1:1", 0, 0)
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

func TestGlobSelection(t *testing.T) {
	tg, _, err := apispec.LoadConfig("../apispec/testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tg.Operations = append(tg.Operations, tg.Operations[0])
	tg.Operations[1].Name = "refunds"
	names := func(o RunOptions) []string {
		ps, err := Plan(tg, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.Name())
		}
		return out
	}
	cases := []struct {
		name string
		o    RunOptions
		want []string
	}{
		{"exact name", RunOptions{Run: []string{"replay/same-status@refunds"}}, []string{"replay/same-status@refunds"}},
		{"case ID selects every operation", RunOptions{Run: []string{"replay/same-status"}}, []string{"replay/same-status@charges", "replay/same-status@refunds"}},
		{"star stays in its segment", RunOptions{Run: []string{"missing/*@charges"}}, []string{"missing/optional-executes@charges", "missing/problem-link@charges", "missing/rejected@charges", "missing/repeat-fails-again@charges"}},
		{"star does not cross /", RunOptions{Run: []string{"*same-status"}}, nil},
		{"double star segment crosses /", RunOptions{Run: []string{"**/same-status"}}, []string{"replay/same-status@charges", "replay/same-status@refunds"}},
		{"double star inside a segment is a star", RunOptions{Run: []string{"**same-status"}}, nil},
		{"alternatives", RunOptions{Run: []string{"{replay,scope}/same-status@charges"}}, []string{"replay/same-status@charges"}},
		{"character class", RunOptions{Run: []string{"replay/same-[sb]*@charges"}}, []string{"replay/same-body@charges", "replay/same-status@charges"}},
		{"skip wins", RunOptions{Run: []string{"missing/*"}, Skip: []string{"missing/*-*", "**/*@refunds"}}, []string{"missing/rejected@charges"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := names(c.o)
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
	// An empty pattern, an unclosed class and a trailing escape are
	// refused before any traffic.
	for _, bad := range []string{"", "[ab", `same\`} {
		if _, err := Plan(tg, nil, RunOptions{Skip: []string{bad}}); err == nil {
			t.Errorf("glob %q accepted", bad)
		}
	}
}

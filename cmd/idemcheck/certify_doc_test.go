package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/scenarios"
)

// requirementsTable is docs/certify.md's "Requirements per level" table.
var requirementsTable = regexp.MustCompile(`(?s)\| requirement \| level \| cases \|\n\|---\|---\|---\|\n(.*?)\n\n`)

// TestCertifyRequirementsTable: certify.md's table of which cases verify
// each MUST and SHOULD requirement is the catalog's, so that the level a
// run reaches and the blocker it names (a requirement and the instance
// that shows it) can be looked up there. On a difference the test prints
// the table to paste.
func TestCertifyRequirementsTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/certify.md")
	if err != nil {
		t.Fatal(err)
	}
	m := requirementsTable.FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/certify.md has no requirements table")
	}
	if want := catalogRequirementsTable(); string(m[1]) != want {
		t.Errorf("rule: certify.md's requirements table is the catalog's; want\n%s", want)
	}
}

// catalogRequirementsTable writes one row per MUST, then SHOULD,
// requirement with the cases citing it; consecutive requirements of one
// level with the same cases share a row.
func catalogRequirementsTable() string {
	var rows []string
	for _, level := range []scenarios.Level{scenarios.Must, scenarios.Should} {
		cases := map[string][]string{}
		for _, c := range scenarios.Catalog() {
			if c.Level != level {
				continue
			}
			for _, r := range c.Requirements {
				cases[r] = append(cases[r], "`"+c.ID+"`")
			}
		}
		reqs := make([]string, 0, len(cases))
		for r := range cases {
			reqs = append(reqs, r)
			slices.Sort(cases[r])
		}
		slices.Sort(reqs)
		for i := 0; i < len(reqs); {
			j := i + 1
			for j < len(reqs) && slices.Equal(cases[reqs[j]], cases[reqs[i]]) {
				j++
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s |", strings.Join(reqs[i:j], ", "), level, strings.Join(cases[reqs[i]], ", ")))
			i = j
		}
	}
	return strings.Join(rows, "\n")
}

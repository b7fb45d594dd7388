package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// GlobWarnings returns one line per --run or --skip glob of o that
// matches no case instance of t (by name or case ID), naming close
// matches: a skip that skips nothing is silent otherwise ('**@refunds',
// the old glob form, selects nothing under doublestar). Bad globs are
// Plan's error, not a warning here.
func GlobWarnings(t *apispec.Target, o RunOptions) []string {
	names := instanceNames(t)
	var out []string
	for _, f := range []struct {
		flag  string
		globs []string
	}{{"run", o.Run}, {"skip", o.Skip}} {
		for _, g := range f.globs {
			if _, err := compileGlobs(f.flag, []string{g}); err != nil || matchAny([]string{g}, names...) {
				continue
			}
			out = append(out, fmt.Sprintf("--%s %s matches no case%s", f.flag, wire.ShellQuote(g), didYouMean(g, names)))
		}
	}
	return out
}

// instanceNames lists every case instance name ("family/case@operation")
// and case ID of the catalog against t, sorted.
func instanceNames(t *apispec.Target) []string {
	var names []string
	for _, c := range Catalog() {
		names = append(names, c.ID)
		if !c.PerOperation {
			continue
		}
		for _, op := range t.Operations {
			names = append(names, Result{Meta: c.Meta, Operation: op.Name}.Name())
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// didYouMean is " (did you mean 'x'?)" naming globs close to g that match
// something: g rewritten into doublestar's form ('**@x' -> '**/*@x'),
// else the nearest names by edit distance. "" when none is close.
func didYouMean(g string, names []string) string {
	var close []string
	for _, c := range rewrites(g) {
		if matchAny([]string{c}, names...) {
			close = []string{c} // the likeliest meaning first
			break
		}
	}
	if len(close) == 0 {
		best := max(2, len(g)/4)
		for _, n := range names {
			switch d := editDistance(g, n); {
			case d < best:
				best, close = d, []string{n}
			case d == best && len(close) < 3:
				close = append(close, n)
			}
		}
		if len(close) > 0 && editDistance(g, close[0]) > max(2, len(g)/4) {
			close = nil
		}
	}
	if len(close) == 0 {
		return ""
	}
	q := make([]string, len(close))
	for i, c := range close {
		q[i] = wire.ShellQuote(c)
	}
	return " (did you mean " + strings.Join(q, " or ") + "?)"
}

// rewrites are the doublestar spellings of what g was likely meant to
// say, likeliest first: a '**' glued to other characters only matches within a segment
// ('**@refunds'), a pattern without '/' cannot reach "family/case".
func rewrites(g string) []string {
	var out []string
	if i := strings.Index(g, "**"); i >= 0 {
		before, after := g[:i], g[i+2:]
		b, a := before, after
		if b != "" && !strings.HasSuffix(b, "/") {
			b += "*/"
		}
		if a != "" && !strings.HasPrefix(a, "/") {
			a = "/*" + a
		}
		out = append(out, b+"**"+a)
	}
	if !strings.Contains(g, "/") {
		out = append(out, "**/"+g, g+"/**", "*/"+g)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

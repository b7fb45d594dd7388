package page

import (
	_ "embed"
	"html/template"
	"sync"
)

//go:embed shell.tmpl
var shell string

// A verdict's classes: green, red.
const (
	Good = "good"
	Bad  = "bad"
)

// Verdict is a page's headline verdict: its words and class (Good, Bad).
type Verdict struct{ Text, Class string }

// New returns the page template name parsed from text, beside the
// shell's templates: "head" (the document from its start to its <title>,
// given the title), "base-css" (the style rules every page starts with),
// "verdict" (the headline's badge, given a Verdict) and "verdict-css"
// (its rules). It is parsed on first use, not at start-up: a process that
// writes no page (`idemcheck serve` among them) neither parses nor keeps
// it, and its garbage collector has that much less to mark. It panics on
// a template that does not parse, as template.Must: the templates are the
// program's own, and every page's tests render it.
func New(name, text string) func() *template.Template {
	return sync.OnceValue(func() *template.Template {
		return template.Must(template.Must(template.New(name).Parse(shell)).Parse(text))
	})
}

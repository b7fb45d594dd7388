package page

import (
	_ "embed"
	"html/template"
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

// New is the page template name parsed from text, beside the shell's
// templates: "head" (the document from its start to its <title>, given
// the title), "base-css" (the style rules every page starts with),
// "verdict" (the headline's badge, given a Verdict) and "verdict-css"
// (its rules). It panics on a template that does not parse, as
// template.Must: the templates are the program's own.
func New(name, text string) *template.Template {
	return template.Must(template.Must(template.New(name).Parse(shell)).Parse(text))
}

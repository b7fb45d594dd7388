package initconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The config is built as YAML nodes so that every guess and gap is a
// comment beside the value it explains, written by the YAML library.

// mapping is a YAML mapping under construction.
type mapping struct{ n *yaml.Node }

func newMapping() mapping { return mapping{&yaml.Node{Kind: yaml.MappingNode}} }

// flowMapping is a mapping written on one line ({a: 1, b: 2}).
func flowMapping() mapping {
	m := newMapping()
	m.n.Style = yaml.FlowStyle
	return m
}

// set appends key: v and returns the key node (for head and foot comments).
func (m mapping) set(key string, v *yaml.Node) *yaml.Node {
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
	if v.Kind != yaml.ScalarNode && v.Style&yaml.FlowStyle == 0 {
		// A block value's comment belongs on its key's line.
		k.LineComment, v.LineComment = v.LineComment, ""
	}
	m.n.Content = append(m.n.Content, k, v)
	return k
}

// str is a string scalar, quoted by the encoder when YAML would read it
// as something else.
func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// quoted is a string scalar in double quotes (header values with ${VAR}).
func quoted(s string) *yaml.Node {
	n := str(s)
	n.Style = yaml.DoubleQuotedStyle
	return n
}

// value encodes any JSON-like value (maps flow-styled when short).
func value(v any) *yaml.Node {
	var n yaml.Node
	if err := n.Encode(v); err != nil { // JSON-decoded values always encode
		return str(fmt.Sprint(v))
	}
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		if b, _ := json.Marshal(v); len(b) <= 100 {
			n.Style = yaml.FlowStyle
		}
	}
	return &n
}

// sequence is a block sequence of items.
func sequence(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Content: items}
}

// guessed and todo mark a value: "# guessed: why" after it on its line.
func guessed(n *yaml.Node, why string) *yaml.Node { return comment(n, "guessed: "+why) }
func todo(n *yaml.Node, what string) *yaml.Node   { return comment(n, "TODO: "+what) }
func from(n *yaml.Node, where string) *yaml.Node  { return comment(n, where) }

func comment(n *yaml.Node, text string) *yaml.Node {
	text = oneLine(text)
	if n.LineComment != "" {
		n.LineComment += "; " + text
	} else {
		n.LineComment = text
	}
	return n
}

// head adds comment lines above a key (each line gets its "# ").
func head(k *yaml.Node, lines ...string) { k.HeadComment = joinComment(k.HeadComment, lines) }

// foot adds comment lines after a key's value (commented-out config).
func foot(k *yaml.Node, lines ...string) { k.FootComment = joinComment(k.FootComment, lines) }

func joinComment(have string, lines []string) string {
	var b strings.Builder
	b.WriteString(have)
	for _, l := range lines {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("# " + l)
	}
	return b.String()
}

// oneLine keeps a comment on its line whatever text it quotes, and short.
func oneLine(s string) string {
	s = singleLine(s)
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// singleLine joins a multi-line message (an error) into one line.
func singleLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// render writes the document with its head comment lines.
func render(root mapping, headLines []string) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root.n}}
	doc.HeadComment = joinComment("", headLines)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
		b.WriteByte('\n') // yaml.v3 ends a trailing foot comment without one
	}
	return b.Bytes(), nil
}

// How a config file's errors name their line and field.

package apispec

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// atFirstBadLine corrects a syntax error's line: the YAML library reports
// where the enclosing block began ("line 2: did not find expected key" for
// a bad indent on line 4), so the line given is that of the shortest
// prefix of the document that no longer parses.
func atFirstBadLine(raw []byte, err error) error {
	var reported int
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &reported); scanErr != nil {
		return err
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	end := 0
	for n, l := range lines {
		end += len(l)
		if n+1 < reported {
			continue
		}
		var v any
		if yaml.Unmarshal(raw[:end], &v) != nil {
			if n+1 == reported {
				return err
			}
			rest := msg[strings.Index(msg, ":")+1:]
			return fmt.Errorf("yaml: line %d:%s", n+1, rest)
		}
	}
	return err
}

// yamlError turns the YAML library's multi-line errors into one line.
func yamlError(err error) error { return errors.New(escapeBreaks.Replace(yamlMessage(err).Error())) }

// escapeBreaks keeps a quoted value's line breaks from splitting the
// message ("cannot unmarshal !!str `0\n0`").
var escapeBreaks = strings.NewReplacer("\r", `\r`, "\n", `\n`)

func yamlMessage(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg := te.Errors[0]
		if i := strings.Index(msg, ": field "); i >= 0 && strings.Contains(msg, " not found in type ") {
			field := msg[i+len(": field "):]
			field = field[:strings.Index(field, " not found in type ")]
			return fmt.Errorf("%s: unknown field %q", msg[:i], field)
		}
		return errors.New(msg)
	}
	return errors.New(strings.TrimPrefix(strings.ReplaceAll(err.Error(), "\n", " "), "yaml: "))
}

// withField names the YAML field at the line an error reports
// ("line 4: cannot unmarshal..." becomes "line 4: ttl: cannot unmarshal...").
func withField(raw []byte, err error) error {
	var line int
	msg := err.Error()
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr != nil || strings.Contains(msg, "unknown field") {
		return err
	}
	var root yaml.Node
	if yaml.Unmarshal(raw, &root) != nil {
		return err
	}
	// The offending scalar is quoted in backticks; it tells keys on one
	// flow-style line apart.
	value := ""
	if i := strings.Index(msg, "`"); i >= 0 {
		if j := strings.Index(msg[i+1:], "`"); j >= 0 {
			value = msg[i+1 : i+1+j]
		}
	}
	path := ""
	switch {
	case value != "":
		path = fieldAtLine(&root, line, func(v *yaml.Node) bool { return v.Kind == yaml.ScalarNode && v.Value == value }, "")
	case strings.Contains(msg, "cannot unmarshal !!seq"):
		path = fieldAtLine(&root, line, func(v *yaml.Node) bool { return v.Kind == yaml.SequenceNode }, "")
	case strings.Contains(msg, "cannot unmarshal !!map"):
		path = fieldAtLine(&root, line, func(v *yaml.Node) bool { return v.Kind == yaml.MappingNode }, "")
	}
	if path == "" {
		path = fieldAtLine(&root, line, func(*yaml.Node) bool { return true }, "")
	}
	if path == "" {
		return err
	}
	prefix := fmt.Sprintf("line %d: ", line)
	return fmt.Errorf("%s%s: %s", prefix, path, strings.TrimPrefix(msg, prefix))
}

// fieldAtLine returns the dotted path of the innermost mapping key on line
// whose value is the offending one (the error's backticked scalar, or a
// sequence or mapping where one was not wanted): one flow-style line may
// hold many keys.
func fieldAtLine(n *yaml.Node, line int, offends func(*yaml.Node) bool, path string) string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p := fieldAtLine(c, line, offends, path); p != "" {
				return p
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := k.Value
			if path != "" {
				sub = path + "." + k.Value
			}
			if p := fieldAtLine(v, line, offends, sub); p != "" {
				return p
			}
			if k.Line == line && offends(v) {
				return sub
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if p := fieldAtLine(c, line, offends, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

package initconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The JSON answer to GraphQL's introspection query, as much of it as a
// schema's SDL needs.
type introspection struct {
	Schema *struct {
		QueryType        *struct{ Name string } `json:"queryType"`
		MutationType     *struct{ Name string } `json:"mutationType"`
		SubscriptionType *struct{ Name string } `json:"subscriptionType"`
		Types            []introType            `json:"types"`
		Directives       []struct {
			Name      string       `json:"name"`
			Locations []string     `json:"locations"`
			Args      []introInput `json:"args"`
		} `json:"directives"`
	} `json:"__schema"`
}

type introType struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Fields []struct {
		Name string       `json:"name"`
		Args []introInput `json:"args"`
		Type introRef     `json:"type"`
	} `json:"fields"`
	InputFields   []introInput            `json:"inputFields"`
	EnumValues    []struct{ Name string } `json:"enumValues"`
	Interfaces    []introRef              `json:"interfaces"`
	PossibleTypes []introRef              `json:"possibleTypes"`
}

type introInput struct {
	Name string   `json:"name"`
	Type introRef `json:"type"`
}

type introRef struct {
	Kind   string    `json:"kind"`
	Name   string    `json:"name"`
	OfType *introRef `json:"ofType"`
}

func (r introRef) String() string {
	switch {
	case r.Kind == "NON_NULL" && r.OfType != nil:
		return r.OfType.String() + "!"
	case r.Kind == "LIST" && r.OfType != nil:
		return "[" + r.OfType.String() + "]"
	}
	return r.Name
}

var builtinScalars = map[string]bool{"String": true, "Int": true, "Float": true, "Boolean": true, "ID": true}

var builtinDirectives = map[string]bool{"skip": true, "include": true, "deprecated": true, "specifiedBy": true, "oneOf": true, "defer": true, "stream": true}

// introspectionSDL is the SDL of an introspection answer ({"data":
// {"__schema": ...}} or {"__schema": ...}).
func introspectionSDL(raw []byte) (string, error) {
	var wrapped struct {
		Data *introspection `json:"data"`
	}
	var in introspection
	if err := json.Unmarshal(raw, &wrapped); err == nil && wrapped.Data != nil {
		in = *wrapped.Data
	} else if err := json.Unmarshal(raw, &in); err != nil {
		return "", fmt.Errorf("not an introspection answer: %v", err)
	}
	s := in.Schema
	if s == nil {
		return "", errors.New("no __schema: want the JSON answer to the introspection query")
	}
	var b strings.Builder
	args := func(as []introInput) string {
		if len(as) == 0 {
			return ""
		}
		parts := make([]string, len(as))
		for i, a := range as {
			parts[i] = a.Name + ": " + a.Type.String()
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	for _, d := range s.Directives {
		if !builtinDirectives[d.Name] {
			fmt.Fprintf(&b, "directive @%s%s on %s\n", d.Name, args(d.Args), strings.Join(d.Locations, " | "))
		}
	}
	b.WriteString("schema {")
	if s.QueryType != nil {
		b.WriteString(" query: " + s.QueryType.Name)
	}
	if s.MutationType != nil {
		b.WriteString(" mutation: " + s.MutationType.Name)
	}
	if s.SubscriptionType != nil {
		b.WriteString(" subscription: " + s.SubscriptionType.Name)
	}
	b.WriteString(" }\n")
	for _, t := range s.Types {
		if strings.HasPrefix(t.Name, "__") || builtinScalars[t.Name] {
			continue
		}
		switch t.Kind {
		case "SCALAR":
			fmt.Fprintf(&b, "scalar %s\n", t.Name)
		case "ENUM":
			names := make([]string, len(t.EnumValues))
			for i, v := range t.EnumValues {
				names[i] = v.Name
			}
			fmt.Fprintf(&b, "enum %s { %s }\n", t.Name, strings.Join(names, " "))
		case "UNION":
			names := make([]string, len(t.PossibleTypes))
			for i, v := range t.PossibleTypes {
				names[i] = v.Name
			}
			fmt.Fprintf(&b, "union %s = %s\n", t.Name, strings.Join(names, " | "))
		case "INPUT_OBJECT":
			fmt.Fprintf(&b, "input %s {\n", t.Name)
			for _, f := range t.InputFields {
				fmt.Fprintf(&b, "  %s: %s\n", f.Name, f.Type)
			}
			b.WriteString("}\n")
		case "OBJECT", "INTERFACE":
			kw := map[string]string{"OBJECT": "type", "INTERFACE": "interface"}[t.Kind]
			impl := ""
			if len(t.Interfaces) > 0 {
				names := make([]string, len(t.Interfaces))
				for i, v := range t.Interfaces {
					names[i] = v.Name
				}
				impl = " implements " + strings.Join(names, " & ")
			}
			fmt.Fprintf(&b, "%s %s%s {\n", kw, t.Name, impl)
			for _, f := range t.Fields {
				fmt.Fprintf(&b, "  %s%s: %s\n", f.Name, args(f.Args), f.Type)
			}
			b.WriteString("}\n")
		}
	}
	return b.String(), nil
}

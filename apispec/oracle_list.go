package apispec

import (
	"fmt"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// ListCount makes an oracle URL a list endpoint (GET /orders): the
// elements of the array at Array are counted. With Where, only those whose
// member at Where equals the key (the bare key, as the API stores it) or,
// when a downstream double runs, the token idemcheck wrote at the
// operation's marker: the list is then a per-key oracle. Without, its length is a global count
// (the run goes serial).
type ListCount struct {
	// Array is the RFC 6901 pointer to the array; "" is the body itself.
	Array string `yaml:"array" json:"array"`
	// Where is the pointer, inside each element, to the member compared
	// with the key.
	Where string `yaml:"where,omitempty" json:"where,omitempty"`
}

func (c *ListCount) String() string {
	s := "array " + c.Array
	if c.Array == "" {
		s = "array (the body)"
	}
	if c.Where != "" {
		s += " where " + c.Where
	}
	return s
}

func (c *ListCount) validate(at string) error {
	if _, err := jsonx.ParsePointer(c.Array); err != nil {
		return fmt.Errorf("%s.array %q: %v", at, c.Array, err)
	}
	if _, err := jsonx.ParsePointer(c.Where); err != nil {
		return fmt.Errorf("%s.where %q: %v", at, c.Where, err)
	}
	return nil
}

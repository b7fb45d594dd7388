package apispec

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// PortPlaceholder in target_cmd and base_url is replaced by the port the
// harness picked when it starts the command (internal/managed).
const PortPlaceholder = "{port}"

// DownstreamPlaceholder in target_cmd is replaced by the downstream
// double's base URL (the API's provider URL).
const DownstreamPlaceholder = "{downstream}"

// FromCommand returns the reference contract's Target for a server the
// harness starts with command (see Target.Command); its base URL is
// http://127.0.0.1:{port}.
func FromCommand(command string, ttl, lease time.Duration) (*Target, error) {
	if _, err := SplitCommand(command); err != nil {
		return nil, fmt.Errorf("--target-cmd %q: %v", command, err)
	}
	t, err := FromURL("http://127.0.0.1", ttl, lease)
	if err != nil {
		return nil, err
	}
	t.BaseURL, t.Command = "", command
	// Each started process counts its own executions (StartReplicas
	// may start several).
	t.Oracle.PerReplica = true
	return t, nil
}

// SplitCommand splits a command line the way a shell splits words, without
// running a shell: blanks separate words, '...' is literal, "..." honours
// backslash escapes of \ " $ and `, and a backslash outside quotes escapes
// the next character.
func SplitCommand(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inW   bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inW {
				words, inW = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i, inW = i+1+j, true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated double quote")
			}
			inW = true
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			cur.WriteByte(s[i])
			inW = true
		default:
			cur.WriteByte(c)
			inW = true
		}
	}
	if inW {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

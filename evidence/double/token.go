package double

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
)

// Prefix starts every token NewToken makes: recognisable in an API's logs
// and the double's fast path (it looks tracked tokens up at each
// occurrence of Prefix instead of searching for each one).
const Prefix = "idemcheck_"

// TokenLen is the length of a NewToken token: Prefix and 16 hex digits.
const TokenLen = len(Prefix) + 16

// NewToken returns a fresh token: Prefix and 64 random bits in hex.
func NewToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return Prefix + hex.EncodeToString(b[:])
}

// isToken reports whether s has NewToken's shape.
func isToken(s string) bool {
	if len(s) != TokenLen || s[:len(Prefix)] != Prefix {
		return false
	}
	for i := len(Prefix); i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// headLen is how many leading bytes index a tracked string that is not a
// token (an idempotency key the API forwards): the search looks each
// position's headLen bytes up in one map, whatever the number of strings.
const headLen = 8

// matcher finds which tracked string a call holds. Not safe for
// concurrent use: the Server guards it.
type matcher struct {
	tokens map[string]bool     // tracked strings of the token shape
	heads  map[string][]string // other tracked strings ≥ headLen, by head
	short  map[string]bool     // other tracked strings < headLen
}

func newMatcher() *matcher {
	return &matcher{tokens: map[string]bool{}, heads: map[string][]string{}, short: map[string]bool{}}
}

func (m *matcher) add(s string) {
	switch {
	case isToken(s):
		m.tokens[s] = true
	case len(s) < headLen:
		m.short[s] = true
	default:
		h := s[:headLen]
		for _, o := range m.heads[h] {
			if o == s {
				return
			}
		}
		m.heads[h] = append(m.heads[h], s)
	}
}

func (m *matcher) remove(s string) {
	switch {
	case isToken(s):
		delete(m.tokens, s)
	case len(s) < headLen:
		delete(m.short, s)
	default:
		h := s[:headLen]
		list := m.heads[h]
		for i, o := range list {
			if o == s {
				list = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(m.heads, h)
		} else {
			m.heads[h] = list
		}
	}
}

// find returns the tracked string in hay, "" when none: a token first
// (the fast path), else the longest other tracked string.
func (m *matcher) find(hay []byte) string {
	if len(m.tokens) > 0 {
		rest := hay
		for {
			i := bytes.Index(rest, []byte(Prefix))
			if i < 0 {
				break
			}
			if len(rest)-i >= TokenLen && m.tokens[string(rest[i:i+TokenLen])] {
				return string(rest[i : i+TokenLen])
			}
			rest = rest[i+len(Prefix):]
		}
	}
	best := ""
	if len(m.heads) > 0 {
		for i := 0; i+headLen <= len(hay); i++ {
			for _, s := range m.heads[string(hay[i:i+headLen])] {
				if len(s) > len(best) && bytes.HasPrefix(hay[i:], []byte(s)) {
					best = s
				}
			}
		}
	}
	if best == "" {
		for s := range m.short {
			if len(s) > len(best) && bytes.Contains(hay, []byte(s)) {
				best = s
			}
		}
	}
	return best
}

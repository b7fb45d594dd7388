package reference

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// fingerprint is the SHA-256 of the body in canonical form: a JSON body is
// decoded and re-encoded with sorted members and no whitespace (numbers
// keep their text), minus the ignored top-level members; any other body is
// hashed as raw bytes. The prefix keeps the two kinds apart.
func fingerprint(body []byte, ignore map[string]bool) string {
	h := sha256.New()
	if canon, ok := canonicalJSON(body, ignore); ok {
		h.Write([]byte("json:"))
		h.Write(canon)
	} else {
		h.Write([]byte("raw:"))
		h.Write(body)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

const jsonSpace = " \t\r\n"

func canonicalJSON(body []byte, ignore map[string]bool) ([]byte, bool) {
	// JSON's own whitespace only: bytes.TrimSpace would also drop Unicode
	// spaces (U+00A0, U+0085), and an invalid body must not share a
	// fingerprint with a valid one.
	trimmed := bytes.Trim(body, jsonSpace)
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	// The whole body must be the one value: dec.More() alone lets a stray
	// closing bracket through ("{}}").
	if err := dec.Decode(&v); err != nil || dec.InputOffset() != int64(len(trimmed)) {
		return nil, false
	}
	if obj, ok := v.(map[string]any); ok {
		for name := range ignore {
			delete(obj, name)
		}
	}
	// encoding/json sorts map keys, which is the canonical order.
	out, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return out, true
}

// Fingerprint returns what the middleware stores as the fingerprint of body
// when no fields are ignored; stores and tests use it to build records.
func Fingerprint(body []byte) string { return fingerprint(body, nil) }

package apispec

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// Key sources, the same for run, load and chaos (Target.Keys):
//
//   - server-issued: the target declares key_source, a request whose answer
//     carries a fresh key; one is fetched per case key (run) and per
//     logical operation or fresh key (chaos, load);
//   - business-id hashes: Target.KeyGen = HashKeys(seed) (--hash-keys);
//   - client-generated: each face's default (UUIDs for run and chaos,
//     RandomKeys for load, cheaper per request). A profile's key_format
//     plugs in here: a face passes a generator obeying it as the default.

// KeyGen makes the n-th client-generated key of a run (n counts from 1).
type KeyGen func(n uint64) string

// UUIDKeys returns a fresh random UUID per key, whatever n.
func UUIDKeys(uint64) string { return uuid.NewString() }

// RandomKeys returns keys unique to this run: a random run prefix plus a
// sequence number (cheaper than a UUID per request, equally collision-free).
func RandomKeys() KeyGen {
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "ik-" + hex.EncodeToString(b[:]) + "-"
	return func(n uint64) string { return prefix + strconv.FormatUint(n, 10) }
}

// HashKeys derives each key from a business id sequence: key n is the
// SHA-256 of "seed:n", so a run with the same seed sends the same keys
// (and, against the same server, gets replays instead of misses).
func HashKeys(seed string) KeyGen {
	return func(n uint64) string {
		sum := sha256.Sum256([]byte(seed + ":" + strconv.FormatUint(n, 10)))
		return hex.EncodeToString(sum[:16])
	}
}

// ErrKeySource wraps a failed fetch of a server-issued key.
var ErrKeySource = errors.New("key_source")

// ErrTTLFrom wraps a failed read of the lifetime the API advertises
// (ttl_from).
var ErrTTLFrom = errors.New("ttl_from")

// KeySource is a request whose answer carries a fresh idempotency key
// (APIs that issue keys, e.g. POST /idempotency-keys -> {"key": "..."}).
type KeySource struct {
	Method string `yaml:"method" json:"method"`
	// Path is relative to BaseURL, or an absolute http(s) URL.
	Path string `yaml:"path" json:"path"`
	// Body is the JSON request body (none when empty).
	Body json.RawMessage `yaml:"-" json:"body,omitempty"`
	// Pointer is the RFC 6901 pointer to the key (a string or number) in
	// the 2xx answer.
	Pointer string `yaml:"pointer" json:"pointer"`
	// Principal (index into Principals) whose headers the request sends.
	Principal int `yaml:"principal" json:"principal"`
}

func (s *KeySource) validate(field string, principals int) error {
	if s == nil {
		return nil
	}
	if !validMethods[s.Method] {
		return fmt.Errorf("%s.method %q: want POST, PUT, PATCH, DELETE or GET", field, s.Method)
	}
	if !strings.HasPrefix(s.Path, "/") && !strings.HasPrefix(s.Path, "http://") && !strings.HasPrefix(s.Path, "https://") {
		return fmt.Errorf("%s.path %q: want a path starting with / or an absolute http(s) URL", field, s.Path)
	}
	if _, err := jsonx.ParsePointer(s.Pointer); err != nil || s.Pointer == "" {
		return fmt.Errorf("%s.pointer %q: want an RFC 6901 pointer to the value (e.g. /key)", field, s.Pointer)
	}
	if s.Principal < 0 || s.Principal >= principals {
		return fmt.Errorf("%s.principal %d: want an index into principals (0..%d)", field, s.Principal, principals-1)
	}
	return nil
}

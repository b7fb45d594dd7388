package scenarios

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

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

func (s *KeySource) validate(principals int) error {
	if s == nil {
		return nil
	}
	if !validMethods[s.Method] {
		return fmt.Errorf("key_source.method %q: want POST, PUT, PATCH, DELETE or GET", s.Method)
	}
	if !strings.HasPrefix(s.Path, "/") && !strings.HasPrefix(s.Path, "http://") && !strings.HasPrefix(s.Path, "https://") {
		return fmt.Errorf("key_source.path %q: want a path starting with / or an absolute http(s) URL", s.Path)
	}
	if _, err := jsonx.ParsePointer(s.Pointer); err != nil || s.Pointer == "" {
		return fmt.Errorf("key_source.pointer %q: want an RFC 6901 pointer to the key (e.g. /key)", s.Pointer)
	}
	if s.Principal < 0 || s.Principal >= principals {
		return fmt.Errorf("key_source.principal %d: want an index into principals (0..%d)", s.Principal, principals-1)
	}
	return nil
}

// Fetch asks the target for a fresh key. record, when not nil, receives
// the exchange (redacted) as evidence. Errors wrap ErrKeySource and say
// what came back.
func (s *KeySource) Fetch(ctx context.Context, t *Target, c *http.Client, record func(Exchange)) (string, error) {
	u := s.Path
	if strings.HasPrefix(u, "/") {
		u = t.BaseURL + u
	}
	var rd io.Reader
	if len(s.Body) > 0 {
		rd = bytes.NewReader(s.Body)
	}
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	where := s.Method + " " + t.Redact(u)
	req, err := http.NewRequestWithContext(ctx, s.Method, u, rd)
	if err != nil {
		return "", fmt.Errorf("%w %s: %v", ErrKeySource, where, err)
	}
	req.Header = t.Header(&Operation{}, s.Principal, len(s.Body) > 0)
	x := Exchange{Label: "key source", Start: time.Now(), Request: ExchangeRequest{Method: s.Method, URL: u, Header: req.Header.Clone(), Body: s.Body}}
	key, err := func() (string, error) {
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		x.Response = &ExchangeResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
		if err != nil {
			return "", err
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return "", fmt.Errorf("status %d: %s", resp.StatusCode, clipText(b))
		}
		doc, err := decodeJSON(b)
		if err != nil {
			return "", fmt.Errorf("answer is not JSON: %s", clipText(b))
		}
		v, ok := jsonx.Pointer(doc, s.Pointer)
		switch v := v.(type) {
		case string:
			if ok && v != "" {
				return v, nil
			}
		case json.Number, float64:
			return fmt.Sprint(v), nil
		}
		return "", fmt.Errorf("no key at %s in %s", s.Pointer, clipText(b))
	}()
	x.Duration = time.Since(x.Start)
	if err != nil {
		x.Error = err.Error()
	}
	if record != nil {
		record(t.redactExchange(x))
	}
	if err != nil {
		return "", fmt.Errorf("%w %s: %s", ErrKeySource, where, t.Redact(err.Error()))
	}
	return key, nil
}

func clipText(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}

// Keys is one run's key strategy (see the list at the top of this file).
type Keys struct {
	t      *Target
	client *http.Client
	gen    KeyGen
	n      atomic.Uint64
}

// Keys returns the run's key strategy: server-issued when the target
// declares key_source, else Target.KeyGen, else def (the face's default).
// client fetches server-issued keys.
func (t *Target) Keys(client *http.Client, def KeyGen) *Keys {
	if t.KeyGen != nil {
		def = t.KeyGen
	}
	return t.KeysFrom(client, def)
}

// KeysFrom is Keys with gen as the client-generated keys whatever
// Target.KeyGen says: load resolves --hash-keys itself and then splits
// the key space into its shards.
func (t *Target) KeysFrom(client *http.Client, gen KeyGen) *Keys {
	return &Keys{t: t, client: client, gen: gen}
}

// Issued reports whether keys come from the server (Next can fail).
func (k *Keys) Issued() bool { return k.t.KeySource != nil }

// Next returns the next key; record receives a key-source exchange as
// evidence (nil: not kept).
func (k *Keys) Next(ctx context.Context, record func(Exchange)) (string, error) {
	if k.t.KeySource != nil {
		return k.t.KeySource.Fetch(ctx, k.t, k.client, record)
	}
	return k.gen(k.n.Add(1)), nil
}

// Gen returns the n-th client-generated key (load numbers its own keys so
// that phases never repeat one).
func (k *Keys) Gen(n uint64) string { return k.gen(n) }

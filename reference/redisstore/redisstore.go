package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/reference"
)

// Store is a reference.Store on Redis.
type Store struct {
	rdb    *redis.Client
	prefix string
}

// Option configures Open.
type Option func(*config)

type config struct {
	prefix  string
	timeout time.Duration
}

// WithPrefix sets the prefix of every key (default "idem:").
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithTimeout bounds dialing and each command (default 2s).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// Open connects to the redis:// URL and checks the server answers within
// the timeout, failing with one line saying why.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	c := config{prefix: "idem:", timeout: 2 * time.Second}
	for _, o := range opts {
		o(&c)
	}
	ro, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis: invalid URL: %w", err)
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = c.timeout, c.timeout, c.timeout
	// A dead server must surface as 503 quickly, not after retries.
	ro.MaxRetries, ro.DialerRetries = 1, 2
	rdb := redis.NewClient(ro)
	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis %s: %w", ro.Addr, err)
	}
	return &Store{rdb: rdb, prefix: c.prefix}, nil
}

// Client is the store's Redis client (tests inspect keys through it).
func (s *Store) Client() *redis.Client { return s.rdb }

// key names the record of a scope; each part is escaped so that no two
// scopes share a key.
func (s *Store) key(sc reference.Scope) string {
	return s.prefix + url.QueryEscape(sc.Principal) + "|" + url.QueryEscape(sc.Method) + "|" +
		url.QueryEscape(sc.Path) + "|" + url.QueryEscape(sc.Key)
}

// record is the JSON stored under a key; times are Unix milliseconds.
type record struct {
	State   int    `json:"state"`
	FP      string `json:"fp"`
	Raw     string `json:"raw,omitempty"`
	Token   string `json:"token"`
	Status  int    `json:"status,omitempty"`
	Header  string `json:"header,omitempty"` // JSON of the allow-listed headers
	Body    []byte `json:"body,omitempty"`
	Created int64  `json:"created"`
	Locked  int64  `json:"locked"`
	Expires int64  `json:"expires"`
}

func (r *record) toRecord() (*reference.Record, error) {
	out := &reference.Record{
		State:       reference.State(r.State),
		Fingerprint: r.FP,
		RawHash:     r.Raw,
		Token:       r.Token,
		Response:    reference.Response{Status: r.Status, Body: r.Body},
		CreatedAt:   time.UnixMilli(r.Created),
		LockedUntil: time.UnixMilli(r.Locked),
		ExpiresAt:   time.UnixMilli(r.Expires),
	}
	if r.Header != "" {
		if err := json.Unmarshal([]byte(r.Header), &out.Response.Header); err != nil {
			return nil, fmt.Errorf("redis: decode stored header: %w", err)
		}
	}
	return out, nil
}

func decode(v string) (*reference.Record, error) {
	var r record
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return nil, fmt.Errorf("redis: decode record: %w", err)
	}
	return r.toRecord()
}

func unavailable(err error) error {
	return fmt.Errorf("%w: redis: %w", reference.ErrUnavailable, err)
}

// Claim implements reference.Store.
func (s *Store) Claim(ctx context.Context, req reference.ClaimRequest) (reference.Claim, error) {
	token := newToken()
	res, err := claimScript.Run(ctx, s.rdb, []string{s.key(req.Scope)},
		token, req.Fingerprint, req.RawHash, max(req.Lease.Milliseconds(), 1), max(req.TTL.Milliseconds(), 1)).Slice()
	if err != nil {
		return reference.Claim{}, unavailable(err)
	}
	if len(res) == 1 {
		return reference.Claim{Outcome: reference.Claimed, Token: token}, nil
	}
	v, _ := res[1].(string)
	rec, err := decode(v)
	if err != nil {
		return reference.Claim{}, err
	}
	return reference.Claim{Outcome: reference.Existing, Record: rec}, nil
}

// Complete implements reference.Store.
func (s *Store) Complete(ctx context.Context, sc reference.Scope, token string, resp reference.Response) error {
	header, err := json.Marshal(resp.Header)
	if err != nil {
		return fmt.Errorf("redis: encode header: %w", err)
	}
	// The body travels as base64, the encoding/json form of []byte.
	n, err := completeScript.Run(ctx, s.rdb, []string{s.key(sc)},
		token, resp.Status, string(header), base64.StdEncoding.EncodeToString(resp.Body)).Int()
	if err != nil {
		return unavailable(err)
	}
	if n == 0 {
		return reference.ErrNotOwner
	}
	return nil
}

// Release implements reference.Store.
func (s *Store) Release(ctx context.Context, sc reference.Scope, token string) error {
	n, err := releaseScript.Run(ctx, s.rdb, []string{s.key(sc)}, token).Int()
	if err != nil {
		return unavailable(err)
	}
	if n == 0 {
		return reference.ErrNotOwner
	}
	return nil
}

// Lookup implements reference.Store.
func (s *Store) Lookup(ctx context.Context, sc reference.Scope) (*reference.Record, error) {
	res, err := lookupScript.Run(ctx, s.rdb, []string{s.key(sc)}).Slice()
	if err != nil {
		return nil, unavailable(err)
	}
	// A missing key comes back as a one-element reply (Lua drops the nil).
	if len(res) < 2 {
		return nil, nil
	}
	v, ok := res[1].(string)
	if !ok {
		return nil, nil
	}
	now, _ := res[0].(int64)
	rec, err := decode(v)
	if err != nil {
		return nil, err
	}
	if rec.State == reference.InFlight && rec.LockedUntil.UnixMilli() <= now {
		return nil, nil // lease ended: the scope is free to claim
	}
	return rec, nil
}

// Close closes the client.
func (s *Store) Close() error {
	if err := s.rdb.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
		return err
	}
	return nil
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

var _ reference.Store = (*Store)(nil)

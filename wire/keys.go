package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// FetchKey asks the target for a fresh key. record, when not nil,
// receives the exchange (redacted) as evidence. Errors wrap ErrKeySource
// and say what came back.
func FetchKey(ctx context.Context, t *apispec.Target, c *http.Client, record func(Exchange)) (string, error) {
	return fetchAt(ctx, t, c, t.KeySource, "key source", apispec.ErrKeySource, record)
}

// fetchAt sends s's request and returns the scalar at its pointer in the
// 2xx JSON answer, as text. Errors wrap base and say what came back.
func fetchAt(ctx context.Context, t *apispec.Target, c *http.Client, s *apispec.KeySource, label string, base error, record func(Exchange)) (string, error) {
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
		return "", fmt.Errorf("%w %s: %v", base, where, err)
	}
	req.Header = t.Header(&apispec.Operation{}, s.Principal, len(s.Body) > 0)
	x := Exchange{Label: label, Start: time.Now(), Request: ExchangeRequest{Method: s.Method, URL: u, Header: req.Header.Clone(), Body: s.Body}}
	v, err := func() (string, error) {
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
		x.Response = &ExchangeResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
		if err != nil {
			return "", err
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return "", fmt.Errorf("status %d: %s", resp.StatusCode, ClipText(b))
		}
		doc, err := jsonx.Decode(b)
		if err != nil {
			return "", fmt.Errorf("answer is not JSON: %s", ClipText(b))
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
		return "", fmt.Errorf("nothing at %s in %s", s.Pointer, ClipText(b))
	}()
	x.Duration = time.Since(x.Start)
	if err != nil {
		x.Error = err.Error()
	}
	if record != nil {
		record(x.Redacted(t))
	}
	if err != nil {
		return "", fmt.Errorf("%w %s: %s", base, where, t.Redact(err.Error()))
	}
	return v, nil
}

func ClipText(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}

// Keys is one run's key strategy (see the list at the top of this file).
type Keys struct {
	t      *apispec.Target
	client *http.Client
	gen    apispec.KeyGen
	n      atomic.Uint64
}

// Keys returns the run's key strategy: server-issued when the target
// declares key_source, else Target.KeyGen, else def (the face's default).
// client fetches server-issued keys.
func NewKeys(t *apispec.Target, client *http.Client, def apispec.KeyGen) *Keys {
	if t.KeyGen != nil {
		def = t.KeyGen
	}
	return KeysFrom(t, client, def)
}

// KeysFrom is Keys with gen as the client-generated keys whatever
// Target.KeyGen says: load resolves --hash-keys itself and then splits
// the key space into its shards.
func KeysFrom(t *apispec.Target, client *http.Client, gen apispec.KeyGen) *Keys {
	return &Keys{t: t, client: client, gen: gen}
}

// Issued reports whether keys come from the server (Next can fail).
func (k *Keys) Issued() bool { return k.t.KeySource != nil }

// Next returns the next key; record receives a key-source exchange as
// evidence (nil: not kept).
func (k *Keys) Next(ctx context.Context, record func(Exchange)) (string, error) {
	if k.t.KeySource != nil {
		return FetchKey(ctx, k.t, k.client, record)
	}
	return k.gen(k.n.Add(1)), nil
}

// Gen returns the n-th client-generated key (load numbers its own keys so
// that phases never repeat one).
func (k *Keys) Gen(n uint64) string { return k.gen(n) }

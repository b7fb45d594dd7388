package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/redis/go-redis/v9"
)

// redisSource reads a Redis stream's entries after the last one it had at
// Open. An entry's fields are its headers; its payload is one field's
// value.
type redisSource struct {
	rdb          *redis.Client
	stream       string
	payloadField string
	last         string // id of the last entry read (or present at Open)
}

// redisBatch is how many entries one XRANGE returns at most.
const redisBatch = 500

func openRedis(ctx context.Context, c *eventspec.Redis) (*redisSource, error) {
	ro, err := redis.ParseURL(c.URL)
	if err != nil {
		return nil, fmt.Errorf("events.redis.url: %v", err)
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = 5*time.Second, 5*time.Second, 5*time.Second
	rdb := redis.NewClient(ro)
	s := &redisSource{rdb: rdb, stream: c.Stream, payloadField: c.PayloadField}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	// A stream that does not exist yet is fine (the API creates it with
	// its first event); a key of another type is a wrong name.
	typ, err := rdb.Type(ctx, c.Stream).Result()
	if err != nil {
		rdb.Close()
		return nil, fmt.Errorf("events.redis.url %s: %v", ro.Addr, oneLine(err))
	}
	if typ != "none" && typ != "stream" {
		rdb.Close()
		return nil, fmt.Errorf("events.redis.stream %q: the key holds a %s, not a stream", c.Stream, typ)
	}
	if s.last, err = s.head(ctx); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("events.redis.stream %q: %v", c.Stream, oneLine(err))
	}
	return s, nil
}

// head is the id of the stream's last entry ("0-0": none).
func (s *redisSource) head(ctx context.Context) (string, error) {
	xs, err := s.rdb.XRevRangeN(ctx, s.stream, "+", "-", 1).Result()
	if err != nil {
		return "", err
	}
	if len(xs) == 0 {
		return "0-0", nil
	}
	return xs[0].ID, nil
}

func (s *redisSource) catchUp(ctx context.Context, add func(message)) error {
	head, err := s.head(ctx)
	if err != nil {
		return err
	}
	for streamIDLess(s.last, head) {
		// "(" makes the start exclusive (Redis 6.2+).
		xs, err := s.rdb.XRangeN(ctx, s.stream, "("+s.last, head, redisBatch).Result()
		if err != nil {
			return err
		}
		if len(xs) == 0 {
			return nil // trimmed away meanwhile
		}
		for _, x := range xs {
			s.last = x.ID
			payload, _ := x.Values[s.payloadField].(string)
			add(message{
				header:   fieldFold(x.Values),
				payload:  []byte(payload),
				position: x.ID,
				time:     streamIDTime(x.ID),
			})
		}
	}
	return nil
}

func (s *redisSource) close() error {
	if err := s.rdb.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
		return err
	}
	return nil
}

// fieldFold looks an entry's field up case-insensitively.
func fieldFold(values map[string]any) func(string) (string, bool) {
	return func(want string) (string, bool) {
		for k, v := range values {
			if strings.EqualFold(k, want) {
				s, ok := v.(string)
				return s, ok
			}
		}
		return "", false
	}
}

// parseStreamID splits "ms-seq".
func parseStreamID(id string) (ms, seq uint64) {
	a, b, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(a, 10, 64)
	seq, _ = strconv.ParseUint(b, 10, 64)
	return ms, seq
}

func streamIDLess(a, b string) bool {
	am, as := parseStreamID(a)
	bm, bs := parseStreamID(b)
	return am < bm || (am == bm && as < bs)
}

// streamIDTime is the server time an entry id carries (auto-generated ids).
func streamIDTime(id string) time.Time {
	ms, _ := parseStreamID(id)
	return time.UnixMilli(int64(ms))
}

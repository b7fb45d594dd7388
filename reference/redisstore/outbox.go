package redisstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/reference"
)

// The outbox is four keys beside the records (one Redis, so one script
// can touch them all with a record): a sequence, the unsent event ids in
// a sorted set by sequence, the events' JSON in a hash, the relays'
// claims (id → end in server milliseconds) in a hash, and the latest
// sent ids in a sorted set trimmed to keepSent.
func (s *Store) outboxKeys() []string {
	p := s.prefix + "outbox:"
	return []string{p + "seq", p + "pending", p + "events", p + "claims", p + "sent"}
}

// keepSent bounds the sent events kept for SentEvents.
const keepSent = 1000

// appendLua appends the events in ARGV[from..] (pairs of id, JSON) to the
// outbox whose keys are KEYS[k..k+2] (seq, pending, events).
const appendLua = `
local function append(k, from)
  for i = from, #ARGV, 2 do
    local seq = redis.call('INCR', KEYS[k])
    redis.call('ZADD', KEYS[k+1], seq, ARGV[i])
    redis.call('HSET', KEYS[k+2], ARGV[i], ARGV[i+1])
  end
end
`

// completeEventsScript: completeScript, then the events appended in the
// same script. KEYS record, seq, pending, events; ARGV token, status,
// header, body, then id/JSON pairs.
var completeEventsScript = redis.NewScript(appendLua + completeLua + `
append(2, 5)
return 1
`)

// appendEventsScript: KEYS seq, pending, events; ARGV id/JSON pairs.
var appendEventsScript = redis.NewScript(appendLua + `
append(1, 1)
return 1
`)

// claimEventsScript: KEYS pending, events, claims; ARGV n, lease ms.
// Returns the JSON of up to n unsent events whose claim ended, claimed.
var claimEventsScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = tonumber(ARGV[1])
local out = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, 999)) do
  if #out >= n then break end
  local until_ = tonumber(redis.call('HGET', KEYS[3], id) or '0')
  if until_ <= now then
    redis.call('HSET', KEYS[3], id, now + tonumber(ARGV[2]))
    table.insert(out, redis.call('HGET', KEYS[2], id))
  end
end
return out
`)

// markSentScript: KEYS pending, events, claims, sent; ARGV ids, then the
// number of sent events to keep last.
var markSentScript = redis.NewScript(`
local keep = tonumber(ARGV[#ARGV])
for i = 1, #ARGV - 1 do
  local seq = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if seq then
    redis.call('ZREM', KEYS[1], ARGV[i])
    redis.call('HDEL', KEYS[3], ARGV[i])
    redis.call('ZADD', KEYS[4], seq, ARGV[i])
  end
end
local extra = redis.call('ZCARD', KEYS[4]) - keep
if extra > 0 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[4], 0, extra - 1)) do
    redis.call('HDEL', KEYS[2], id)
  end
  redis.call('ZREMRANGEBYRANK', KEYS[4], 0, extra - 1)
end
return 1
`)

// eventArgs flattens events into id/JSON pairs.
func eventArgs(events []reference.Event) ([]any, error) {
	args := make([]any, 0, 2*len(events))
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("redis: encode event: %w", err)
		}
		args = append(args, e.ID, string(b))
	}
	return args, nil
}

func decodeEvents(vals []any) ([]reference.Event, error) {
	out := make([]reference.Event, 0, len(vals))
	for _, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue // gone meanwhile
		}
		var e reference.Event
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			return nil, fmt.Errorf("redis: decode event: %w", err)
		}
		out = append(out, e)
	}
	return out, nil
}

// CompleteWithEvents implements reference.EventStore: one script completes
// the record and appends the events, atomically on the server.
func (s *Store) CompleteWithEvents(ctx context.Context, sc reference.Scope, token string, resp reference.Response, events []reference.Event) error {
	header, err := json.Marshal(resp.Header)
	if err != nil {
		return fmt.Errorf("redis: encode header: %w", err)
	}
	evArgs, err := eventArgs(events)
	if err != nil {
		return err
	}
	ks := s.outboxKeys()
	args := append([]any{token, resp.Status, string(header), base64.StdEncoding.EncodeToString(resp.Body)}, evArgs...)
	n, err := completeEventsScript.Run(ctx, s.rdb, []string{s.key(sc), ks[0], ks[1], ks[2]}, args...).Int()
	if err != nil {
		return unavailable(err)
	}
	if n == 0 {
		return reference.ErrNotOwner
	}
	return nil
}

// AppendEvents implements reference.EventStore.
func (s *Store) AppendEvents(ctx context.Context, events []reference.Event) error {
	if len(events) == 0 {
		return nil
	}
	args, err := eventArgs(events)
	if err != nil {
		return err
	}
	ks := s.outboxKeys()
	if err := appendEventsScript.Run(ctx, s.rdb, ks[:3], args...).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// ClaimEvents implements reference.EventStore.
func (s *Store) ClaimEvents(ctx context.Context, n int, lease time.Duration) ([]reference.Event, error) {
	ks := s.outboxKeys()
	vals, err := claimEventsScript.Run(ctx, s.rdb, ks[1:4], n, max(lease.Milliseconds(), 1)).Slice()
	if err != nil {
		return nil, unavailable(err)
	}
	return decodeEvents(vals)
}

// MarkSent implements reference.EventStore.
func (s *Store) MarkSent(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, 0, len(ids)+1)
	for _, id := range ids {
		args = append(args, id)
	}
	args = append(args, keepSent)
	if err := markSentScript.Run(ctx, s.rdb, s.outboxKeys()[1:], args...).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// SentEvents implements reference.EventStore.
func (s *Store) SentEvents(ctx context.Context, n int) ([]reference.Event, error) {
	ks := s.outboxKeys()
	ids, err := s.rdb.ZRange(ctx, ks[4], int64(-n), -1).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	vals, err := s.rdb.HMGet(ctx, ks[2], ids...).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	return decodeEvents(vals)
}

var _ reference.EventStore = (*Store)(nil)

package redisstore

import "github.com/redis/go-redis/v9"

// A record is one string key holding JSON (see record), with the TTL as the
// key's native expiry. Each step that reads and then writes a record is one
// Lua script, so it is atomic on the server; times come from the server's
// clock (TIME) so app servers with skewed clocks agree on leases.

// claimScript: KEYS[1] record; ARGV token, fingerprint, raw hash, lease ms,
// ttl ms.
// Returns {1} when claimed, {2, json} when a live record holds the scope.
var claimScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rec = cjson.encode({state = 1, fp = ARGV[2], raw = ARGV[3], token = ARGV[1], created = now,
  locked = now + tonumber(ARGV[4]), expires = now + tonumber(ARGV[5])})
if redis.call('SET', KEYS[1], rec, 'NX', 'PX', ARGV[5]) then
  return {1}
end
local cur = redis.call('GET', KEYS[1])
local r = cjson.decode(cur)
if r.state == 1 and r.locked <= now then
  -- in flight with its lease ended: the owner is presumed dead, take over
  redis.call('SET', KEYS[1], rec, 'PX', ARGV[5])
  return {1}
end
return {2, cur}
`)

// completeLua stores the outcome in the in-flight record KEYS[1] owned by
// token ARGV[1]: status ARGV[2], header JSON ARGV[3], body (base64)
// ARGV[4]; it returns 0 when the token does not own the record.
const completeLua = `
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local r = cjson.decode(cur)
if r.token ~= ARGV[1] or r.state ~= 1 then return 0 end
r.state = 2
r.status = tonumber(ARGV[2])
r.header = ARGV[3]
r.body = ARGV[4]
redis.call('SET', KEYS[1], cjson.encode(r), 'KEEPTTL')
`

// completeScript: completeLua. Returns 1 when stored, 0 when the token
// does not own the record.
var completeScript = redis.NewScript(completeLua + `
return 1
`)

// releaseScript: KEYS[1] record; ARGV token. Deletes the in-flight record
// owned by token; returns 1, or 0 when token does not own it.
var releaseScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local r = cjson.decode(cur)
if r.token ~= ARGV[1] or r.state ~= 1 then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)

// lookupScript: KEYS[1] record. Returns {now ms, json or false}: the
// caller judges the lease against the server's clock.
var lookupScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {now, redis.call('GET', KEYS[1])}
`)

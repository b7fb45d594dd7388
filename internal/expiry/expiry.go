package expiry

import "time"

// SentInside reports whether a request sent at sent, under a key first
// sent at first, is inside the judged window TTL − margin: the key's
// record must then still exist (no record is older than the key's first
// request, and none expires sooner than ttl after it; the margin absorbs
// transit), however late the server answered. A ttl ≤ 0 (none declared)
// never expires.
func SentInside(first, sent time.Time, ttl, margin time.Duration) bool {
	return ttl <= 0 || sent.Sub(first) <= ttl-margin
}

package scenarios

import (
	"fmt"
	"time"
)

// firstSentFuture is how far ahead the future first_sent probe is: beyond
// any clock skew a server tolerates.
const firstSentFuture = time.Hour

// nonASCIIProbe adds to probes, for a key in a message field (AIP-155's
// request_id, AEP-155's idempotency_key), a fresh key with non-ASCII
// letters: both documents restrict the key "to 36 ASCII characters". A
// metadata key is not probed: gRPC cannot send such a value.
func (e *Env) nonASCIIProbe(probes map[string][]string) {
	if e.Target.KeyField() == "" {
		return
	}
	const prefix = "ключ-"
	k := prefix + e.NewKey()
	if n := e.Profile.KeyMaxLen; n >= len(prefix) && len(k) > n {
		k = k[:n] // within key_max_len (in bytes too): only the letters are off-format
	}
	probes["non-ASCII key"] = []string{k}
}

// firstSentProbes adds to probes, for an AEP-155 key ({key, first_sent}),
// a fresh key whose first_sent is expired and one whose first_sent is in
// the future: AEP-155 "must reject requests with expired keys, and must
// reject requests with keys that are in the future", part of the key's
// published format. It returns each probe's first_sent. Expired is past
// the declared ttl (the retention): twice it, and at least a minute past
// it; with no ttl declared what is expired is unknown, and not probed.
func (e *Env) firstSentProbes(probes map[string][]string) map[string]time.Time {
	out := map[string]time.Time{}
	if e.Target.Key == nil || !e.Target.Key.FirstSent {
		return out
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if ttl := e.Target.TTL; ttl > 0 {
		ago := ttl + max(ttl, time.Minute)
		name := fmt.Sprintf("first_sent %s ago (ttl %s: expired)", ago, ttl)
		probes[name], out[name] = []string{e.NewKey()}, now.Add(-ago)
	}
	name := fmt.Sprintf("first_sent %s in the future", firstSentFuture)
	probes[name], out[name] = []string{e.NewKey()}, now.Add(firstSentFuture)
	return out
}

// firstSentProbe is the retry of an AEP-155 key with the same message and
// another first_sent, a second earlier: AEP-155 "should reject requests
// that use the same key but have a different first_sent". As a member
// idemcheck made up (generated), a replay is a SHOULD miss; an execution
// fails.
func firstSentProbe() probe {
	return probe{name: "first_sent changed by -1s", firstSentShift: -time.Second, generated: true}
}

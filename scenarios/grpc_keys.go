package scenarios

import "time"

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

// firstSentProbe is the retry of an AEP-155 key with the same message and
// another first_sent, a second earlier: AEP-155 "should reject requests
// that use the same key but have a different first_sent". As a member
// idemcheck made up (generated), a replay is a SHOULD miss; an execution
// fails.
func firstSentProbe() probe {
	return probe{name: "first_sent changed by -1s", firstSentShift: -time.Second, generated: true}
}

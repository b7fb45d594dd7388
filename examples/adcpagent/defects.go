package main

import (
	"fmt"
	"slices"
	"strings"
)

// defect names a broken build (ADCPAGENT_DEFECT=name); "" is the correct
// one. Each is an idempotency bug a developer could plausibly write.
type defect string

const (
	// ignoresKey validates the key and never looks it up: every retry
	// books again (the live probe of adcontextprotocol/adcp#2346).
	ignoresKey defect = "ignores-key"
	// noFingerprint keeps no digest of the payload: a reused key with
	// another budget replays the first media buy.
	noFingerprint defect = "no-fingerprint"
	// leaksPayload answers IDEMPOTENCY_CONFLICT with the stored result
	// in the error (a stolen key becomes a read oracle: AdCP's
	// conflict_no_payload_leak).
	leaksPayload defect = "leaks-payload"
	// executesOnMismatch books the changed request, then answers
	// IDEMPOTENCY_CONFLICT.
	executesOnMismatch defect = "executes-on-mismatch"
)

var defects = []defect{ignoresKey, noFingerprint, leaksPayload, executesOnMismatch}

func parseDefect(s string) (defect, error) {
	if s == "" || slices.Contains(defects, defect(s)) {
		return defect(s), nil
	}
	names := make([]string, len(defects))
	for i, d := range defects {
		names[i] = string(d)
	}
	return "", fmt.Errorf("ADCPAGENT_DEFECT %q: want one of %s (or unset for the correct build)", s, strings.Join(names, ", "))
}

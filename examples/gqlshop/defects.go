package main

import (
	"fmt"
	"slices"
	"strings"
)

// defect names a broken build (GQLSHOP_DEFECT=name); "" is the correct
// one. Each is an idempotency bug a developer could plausibly write.
type defect string

const (
	// ignoresKey parses the directive and never looks it up: every retry
	// charges again.
	ignoresKey defect = "ignores-key"
	// noFingerprint keeps no digest of the arguments: a reused key with
	// another amount replays the first charge.
	noFingerprint defect = "no-fingerprint"
	// leaksPayload answers a reused key with other arguments with an
	// error message quoting the stored charge.
	leaksPayload defect = "leaks-payload"
	// executesOnMismatch charges the changed request, then answers the
	// mismatch error.
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
	return "", fmt.Errorf("GQLSHOP_DEFECT %q: want one of %s (or unset for the correct build)", s, strings.Join(names, ", "))
}

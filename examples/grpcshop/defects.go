package main

import (
	"fmt"
	"slices"
	"strings"
)

// defect names a broken build, selected at start (GRPCSHOP_DEFECT=name).
// Each is one idempotency bug a developer could plausibly write; the
// correct build is "".
type defect string

const (
	// replaysOtherResponse reads a completed record back with a query that
	// lost its key condition in a refactor: a retry gets the reply of the
	// customer's latest completed request of that method, whichever key it
	// came under. The claim itself is per key.
	replaysOtherResponse defect = "replays-other-response"
	// partialDigest fingerprints an order by its sku, card and reference
	// only (quantity was added later and forgotten): the same request_id
	// with another quantity replays the first order.
	partialDigest defect = "partial-digest"
	// executeOnMismatch takes a changed request under a completed key for
	// an amendment: it charges again and the newer result replaces the
	// record.
	executeOnMismatch defect = "execute-on-mismatch"
	// checkThenInsert looks the key up, then inserts its record with ON
	// CONFLICT DO NOTHING and ignores whether it did: same-key requests
	// arriving together all execute.
	checkThenInsert defect = "check-then-insert"
	// leaseLapses claims a key for 1 s whatever the provider timeout: a
	// retry during a slow charge takes the key over and charges again.
	leaseLapses defect = "lease-lapses"
	// noCallerScope keys records by method and key only: another
	// customer's request under the same key gets the first one's reply.
	noCallerScope defect = "no-caller-scope"
	// firstSentIgnored never reads AEP-155's first_sent: an expired, a
	// future or a changed one is accepted.
	firstSentIgnored defect = "first-sent-ignored"
)

// defects lists every broken build.
var defects = []defect{replaysOtherResponse, partialDigest, executeOnMismatch, checkThenInsert, leaseLapses, noCallerScope, firstSentIgnored}

// parseDefect accepts "" (the correct build) or one name of defects.
func parseDefect(s string) (defect, error) {
	if s == "" || slices.Contains(defects, defect(s)) {
		return defect(s), nil
	}
	names := make([]string, len(defects))
	for i, d := range defects {
		names[i] = string(d)
	}
	return "", fmt.Errorf("GRPCSHOP_DEFECT %q: want one of %s (or unset for the correct build)", s, strings.Join(names, ", "))
}

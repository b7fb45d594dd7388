package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// defect names a broken build of the shop, selected at start
// (SHOP_DEFECT=name). Each reproduces one classic idempotency bug in code
// a developer could plausibly have written; the correct build is "".
type defect string

const (
	// executeThen422 runs a changed body under a completed key (charges the
	// provider, inserts the order), then answers 422 anyway.
	executeThen422 defect = "execute-then-422"
	// leaseLapses gives in-flight claims a 1 s lease, shorter than the
	// provider call may take: a retry during a slow charge takes the key
	// over and charges again.
	leaseLapses defect = "lease-lapses"
	// checkThenInsert looks the key up, then inserts its record without an
	// atomic claim (ON CONFLICT DO NOTHING, result ignored): same-key
	// requests arriving together all execute.
	checkThenInsert defect = "check-then-insert"
	// wedges5xx marks the record failed after a provider 5xx instead of
	// releasing it; the lookup treats any unfinished record as in flight,
	// so the key answers 409 until its TTL.
	wedges5xx defect = "5xx-wedges-key"
	// declinesNotStored releases the key after a provider decline (402)
	// as it does after a 5xx: a retry charges the card again.
	declinesNotStored defect = "declines-not-stored"
	// publishBeforeCommit (with -kafka-brokers) publishes the order's
	// event from the handler as it places the order, before the charge
	// and the transaction that records it: a charge that fails, or a
	// crash before the commit, leaves the event out anyway, and the
	// retry announces the order again.
	publishBeforeCommit defect = "publish-before-commit"
	// publishOnReplay (with -kafka-brokers) writes the order's event to
	// the outbox again on each replay of its 201.
	publishOnReplay defect = "publish-on-replay"
	// relayLosesOnKill (with -kafka-brokers) marks outbox rows sent, then
	// hands them to the producer without waiting for the broker: a kill
	// before the producer sends them loses their events.
	relayLosesOnKill defect = "relay-loses-on-kill"
)

// defects lists every broken build, in the order the docs give them.
// checkThenInsertGap is the check-then-insert build's time between its
// lookup and its insert: a network round trip to a database.
const checkThenInsertGap = 2 * time.Millisecond

var defects = []defect{executeThen422, leaseLapses, checkThenInsert, wedges5xx, declinesNotStored}

// eventDefects lists the broken builds of the shop's events; they need
// -kafka-brokers.
var eventDefects = []defect{publishBeforeCommit, publishOnReplay, relayLosesOnKill}

// parseDefect accepts "" (the correct build) or one name of defects.
func parseDefect(s string) (defect, error) {
	all := slices.Concat(defects, eventDefects)
	if s == "" || slices.Contains(all, defect(s)) {
		return defect(s), nil
	}
	names := make([]string, len(all))
	for i, d := range all {
		names[i] = string(d)
	}
	return "", fmt.Errorf("SHOP_DEFECT %q: want one of %s (or unset for the correct build)", s, strings.Join(names, ", "))
}

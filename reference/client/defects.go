package client

import (
	"slices"
	"strings"
)

// Defect is a classic client mistake the reference client can make.
type Defect string

// The defects, each the story of a real incident class.
const (
	// FreshKeyPerRetry mints a new key inside the retry loop: the server
	// never sees a duplicate.
	FreshKeyPerRetry Defect = "fresh-key-per-retry"
	// KeyInDefaultHeaders stores the first call's key in the client's
	// shared default headers: every later call reuses it.
	KeyInDefaultHeaders Defect = "key-in-default-headers"
	// BodyRebuiltPerAttempt serialises the body again on each attempt,
	// with a send timestamp: one key, several payloads.
	BodyRebuiltPerAttempt Defect = "body-rebuilt-per-attempt"
	// Retried422 retries a 422 unchanged.
	Retried422 Defect = "retried-422"
	// IgnoredRetryAfter retries on its own back-off, ignoring Retry-After.
	IgnoredRetryAfter Defect = "ignored-retry-after"
	// NoKeyOnTimeoutRetry leaves the key out on the code path that
	// retries a timed-out call: the double-charge story.
	NoKeyOnTimeoutRetry Defect = "no-key-on-timeout-retry"
)

var defectDocs = map[Defect]string{
	FreshKeyPerRetry:      "a new key on every retry",
	KeyInDefaultHeaders:   "the first key stored in shared default headers, reused by every later call",
	BodyRebuiltPerAttempt: "the body serialised again per attempt, with a send timestamp",
	Retried422:            "a 422 retried unchanged",
	IgnoredRetryAfter:     "Retry-After ignored: retries on its own short back-off",
	NoKeyOnTimeoutRetry:   "no key on the path that retries a timed-out call",
}

// Defects lists the defect names, sorted.
func Defects() []string {
	var out []string
	for d := range defectDocs {
		out = append(out, string(d))
	}
	slices.Sort(out)
	return out
}

// DefectDoc says what a defect does; ok is false for an unknown name.
func DefectDoc(name string) (doc string, ok bool) {
	doc, ok = defectDocs[Defect(strings.TrimSpace(name))]
	return doc, ok
}

package reference

import (
	"net/http"
	"slices"
	"time"
)

// Option configures Middleware.
type Option func(*config)

type config struct {
	principal     func(*http.Request) string
	keyOptional   bool
	rawKeys       bool
	ignore        map[string]bool
	storeAll      bool
	ttl, lease    time.Duration
	maxBody       int64
	replayHeaders []string
	// fingerprintHeaders: request fields that are part of the request's
	// identity (canonical names, sorted).
	fingerprintHeaders []string
	docsURL            string
	defects            defectSet
	// checkThenInsertGap is the time the check-then-insert defect spends
	// between its lookup and its insert: 1 ms, a realistic window (a
	// round trip to a store), not one widened until any probe sees it.
	checkThenInsertGap time.Duration
	// failedKeyLocked: a key whose handler crashed or timed out answers
	// 409 until it expires (WithFailedKeyLocked).
	failedKeyLocked bool
	// tombstoneOver: bodies longer are stored as a 413 tombstone (0: none).
	tombstoneOver int64
}

// Defaults of Middleware.
const (
	DefaultTTL     = 24 * time.Hour
	DefaultLease   = 30 * time.Second
	DefaultMaxBody = 1 << 20
)

// DefaultReplayHeaders are the response headers stored and replayed: the
// representation's, every line kept. Per-response headers (Date, request
// ids, rate limits) are deliberately absent, and so are credentials
// (Set-Cookie, WWW-Authenticate, Authentication-Info): a replay hands the
// first client's session to whoever retries.
var DefaultReplayHeaders = []string{"Content-Type", "Content-Language", "Content-Location", "Content-Disposition", "Location", "ETag", "Last-Modified", "Link"}

// credentialHeaders are what the replay-credentials defect stores too.
var credentialHeaders = []string{"Set-Cookie", "Www-Authenticate", "Authentication-Info"}

func defaultConfig() config {
	return config{
		principal:          func(r *http.Request) string { return r.Header.Get("Authorization") },
		rawKeys:            true,
		ttl:                DefaultTTL,
		lease:              DefaultLease,
		maxBody:            DefaultMaxBody,
		replayHeaders:      canonicalNames(DefaultReplayHeaders),
		docsURL:            DefaultDocsURL,
		defects:            defectSet{},
		checkThenInsertGap: time.Millisecond,
	}
}

// WithPrincipal sets how the requester is identified; the principal is part
// of every record's scope. Default: the Authorization header value.
func WithPrincipal(f func(*http.Request) string) Option {
	return func(c *config) { c.principal = f }
}

// WithKeyOptional lets mutating requests without a key run, unprotected,
// instead of answering 400.
func WithKeyOptional() Option { return func(c *config) { c.keyOptional = true } }

// WithSFStringOnly rejects raw keys (abc) and accepts only the draft's
// sf-string form ("abc").
func WithSFStringOnly() Option { return func(c *config) { c.rawKeys = false } }

// WithIgnoreFields leaves top-level JSON members out of the fingerprint
// (volatile fields such as a client timestamp).
func WithIgnoreFields(names ...string) Option {
	return func(c *config) {
		c.ignore = make(map[string]bool, len(names))
		for _, n := range names {
			c.ignore[n] = true
		}
	}
}

// WithStoreServerErrors stores and replays 5xx outcomes too (Stripe
// style). By default a 5xx releases the key so a retry executes again.
func WithStoreServerErrors() Option { return func(c *config) { c.storeAll = true } }

// WithTTL sets how long a record lives, counted from its claim.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithLease sets how long an in-flight claim stays exclusive; after it, a
// retry may reclaim the key (the owner is presumed dead).
func WithLease(d time.Duration) Option { return func(c *config) { c.lease = d } }

// WithMaxBody bounds the request body read for the fingerprint (413 above).
func WithMaxBody(n int64) Option { return func(c *config) { c.maxBody = n } }

// WithReplayHeaders replaces the allow-list of stored response headers.
func WithReplayHeaders(names ...string) Option {
	return func(c *config) { c.replayHeaders = canonicalNames(names) }
}

// WithFingerprintHeaders names request header fields that are part of what
// a request asks for (an API version, Stripe-Version): the same key with
// another value is another request, answered 422 like a changed body.
// The query is always part of it. Default: none.
func WithFingerprintHeaders(names ...string) Option {
	return func(c *config) {
		c.fingerprintHeaders = slices.Compact(slices.Sorted(slices.Values(canonicalNames(names))))
	}
}

// WithDocsURL sets the documentation URL the problem "type" members point at.
func WithDocsURL(u string) Option { return func(c *config) { c.docsURL = u } }

// WithCheckThenInsertGap sets the time the check-then-insert defect spends
// between its lookup and its insert (default 1 ms). A wider window lets a
// paced load, not only a barrier-released burst, show the defect.
func WithCheckThenInsertGap(d time.Duration) Option {
	return func(c *config) { c.checkThenInsertGap = d }
}

// WithDefects builds the middleware with deliberate bugs (see Defects).
// Use ParseDefects to validate names from users.
func WithDefects(ds ...Defect) Option {
	return func(c *config) {
		for _, d := range ds {
			c.defects[d] = true
		}
	}
}

func canonicalNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = http.CanonicalHeaderKey(n)
	}
	return out
}

// WithFailedKeyLocked keeps the key of a handler that crashed or timed out
// in flight (409) until the key expires, as Whop documents, instead of
// releasing it: a legal choice, judged with profile failed_key:
// locked-until-expiry.
func WithFailedKeyLocked() Option { return func(c *config) { c.failedKeyLocked = true } }

// WithLargeTombstone stores a response whose body is longer than n bytes
// as a 413 tombstone: its retries are refused, never executed again. A
// legal choice, judged with profile large_replay: tombstone.
func WithLargeTombstone(n int64) Option { return func(c *config) { c.tombstoneOver = n } }

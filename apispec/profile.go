package apispec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// Tri is a profile expectation that may be unknown. A case whose expectation
// is Unknown reports what it observed as a finding and never fails.
type Tri string

const (
	Yes     Tri = "true"
	No      Tri = "false"
	Unknown Tri = "?"
)

// UnmarshalYAML accepts true, false, "?" and "unknown".
func (t *Tri) UnmarshalYAML(n *yaml.Node) error {
	switch strings.ToLower(n.Value) {
	case "true", "yes":
		*t = Yes
	case "false", "no":
		*t = No
	case "?", "unknown", "":
		*t = Unknown
	default:
		return fmt.Errorf("line %d: %q is not true, false or \"?\"", n.Line, n.Value)
	}
	return nil
}

// Scope of a key on another endpoint (IK-SCOPE-2).
const (
	ScopeIndependent = "independent" // the same key elsewhere is a new key (seeds)
	ScopeError       = "error"       // reuse elsewhere is an idempotency error (Stripe)
	ScopeUnknown     = "unknown"
)

// Expiry modes (IK-EXPIRY-2/3).
const (
	ExpiryFresh      = "fresh"       // after TTL + grace the key executes again
	ExpiryExpired409 = "expired-409" // after retention: 409 "result expired"
	ExpiryUnknown    = "unknown"
)

// Blank keys (blank_key): a key of spaces only ("   ") is a valid
// sf-string inside a 1–255 character format, and no draft sentence makes
// rejecting it a requirement; the profile says what the API does.
const (
	BlankReject  = "reject" // a blank key is an invalid key (4xx)
	BlankAccept  = "accept" // a blank key is a key like any other
	BlankUnknown = "?"      // recorded, not judged
)

// Key case (key_case): keys are opaque sf-strings, so "7F40…" and
// "7f40…" are two keys; an API may document folding them (UUID-only
// formats do).
const (
	KeyCaseSensitive = "sensitive" // keys differing in case are distinct
	KeyCaseFolded    = "folded"    // the API folds case before lookup
	KeyCaseUnknown   = "?"
)

// Another query under a used key (query_mismatch): the draft fingerprints
// "the request payload" and says nothing of the target URI, so a server
// may take another query for another request (rejected like a changed
// body) or for another resource (executed fresh). Never for the same
// request: the first answer replayed is wrong under every setting.
const (
	QueryReject = "reject" // another query is a mismatch: the profile's mismatch status
	QueryFresh  = "fresh"  // another query is another resource: a fresh execution
	QueryEither = "either" // both are legal (the draft leaves it open)
)

// What a key holds after its attempt died (failed_key).
const (
	FailedKeyReleased = "released"            // retryable after lease + grace
	FailedKeyLocked   = "locked-until-expiry" // in flight until the TTL ends (Whop)
)

// How a response too large to store replays (large_replay).
const (
	LargeReplayed  = "replayed"  // whole, byte for byte
	LargeTombstone = "tombstone" // 413 Content Too Large, never re-executed
)

// Replay comparison modes (IK-REPLAY-2).
// The profile's replay values.
const (
	ReplayStored       = "stored"
	ReplayCurrentState = "current-state"
)

const (
	CompareBytes  = "bytes"
	CompareJSON   = "json"
	CompareStatus = "status"
)

// Profile is what a target is expected to do where sources differ
// (spec.md B.1). Every field can be overridden in YAML under
// profile.overrides using its yaml name.
type Profile struct {
	Name string `yaml:"-" json:"name"`
	// KeySyntax is the key form the API documents; the Target's key_syntax
	// (what the suite sends) defaults to it.
	KeySyntax KeySyntax `yaml:"key_syntax" json:"key_syntax"`
	// KeyRequired: the operations are documented as requiring the key.
	KeyRequired Tri `yaml:"key_required" json:"key_required"`
	// Statuses the profile prefers; empty means unknown. Another 4xx is a
	// SHOULD miss (warn), never a fail.
	// A gRPC target's profile may name codes (INVALID_ARGUMENT): a gRPC
	// answer is then judged by its exact code (Statuses, GRPCStatus).
	MissingStatus  Statuses `yaml:"missing_status" json:"missing_status"`
	MismatchStatus Statuses `yaml:"mismatch_status" json:"mismatch_status"`
	InFlightStatus Statuses `yaml:"in_flight_status" json:"in_flight_status"`
	// BlockOK: a duplicate in flight may wait for the original and then get
	// the replay (trap C1), answered within MaxBlock.
	BlockOK  bool          `yaml:"block_ok" json:"block_ok"`
	MaxBlock time.Duration `yaml:"max_block" json:"max_block"`
	// Replay is what a retry under a used key answers: ReplayStored (the
	// default, "" too) or ReplayCurrentState, the resource's current state
	// on an update, as an API may document (Baselayer); only
	// update/after-other-key reads it.
	Replay string `yaml:"replay" json:"replay,omitempty"`
	// ReplayHeader names the replay marker ("" = none is defined);
	// ReplayHeaderValue is its value on replays.
	ReplayHeader      string `yaml:"replay_header" json:"replay_header,omitempty"`
	ReplayHeaderValue string `yaml:"replay_header_value" json:"replay_header_value,omitempty"`
	ReplayCompare     string `yaml:"replay_compare" json:"replay_compare"`
	// ReplayMetadata names the response metadata (a gRPC answer's headers
	// or trailers; an HTTP answer's header fields) a replay repeats with
	// the original's values, beside the representation headers
	// (replay/same-headers).
	ReplayMetadata []string `yaml:"replay_metadata" json:"replay_metadata,omitempty"`
	// ReplayBinary: a gRPC replay's message is also compared byte for byte
	// in its deterministic binary encoding, beside the body (protojson)
	// replay_compare compares: what protojson does not show (unknown
	// fields) counts.
	ReplayBinary bool `yaml:"replay_binary" json:"replay_binary,omitempty"`
	// ReplayCredentials: a replay may repeat the credential fields the
	// original answer set (Set-Cookie, WWW-Authenticate,
	// Authentication-Info and their proxy forms). false: it carries none of
	// them, since a stored session cookie or challenge handed to every
	// retry is a credential leak (granit-fx/granit-dotnet PR #1151); true
	// allows them; "?" records what the replay carried
	// (replay/no-credentials). A field replay_metadata names is allowed.
	ReplayCredentials Tri `yaml:"replay_credentials" json:"replay_credentials"`
	// RetryCompletes: a retry after a failed attempt completes that
	// attempt's work and answers the updated outcome (Stripe API v2), so
	// the failed attempt and its retry may count as one execution. false:
	// a retry after a failure is an execution of its own; "?": recorded.
	RetryCompletes Tri `yaml:"retry_completes" json:"retry_completes"`
	// FailedKey is what a key holds after its attempt died mid-way (a
	// crash, a timeout, a 5xx): FailedKeyReleased (retryable once the lease
	// and grace have passed) or FailedKeyLocked (Whop: 409 until the key
	// expires; judged against the TTL instead of the lease).
	FailedKey string `yaml:"failed_key" json:"failed_key,omitempty"`
	// LargeReplay is how a response too large to store is replayed:
	// LargeReplayed (whole, the default) or LargeTombstone (a 413 and no
	// re-execution: the API keeps a tombstone instead of the body).
	LargeReplay string `yaml:"large_replay" json:"large_replay,omitempty"`
	// ProblemJSON: idempotency errors link to docs (problem+json type or
	// Link rel=describedby), per the draft's §2.7 examples.
	ProblemJSON      Tri    `yaml:"problem_json" json:"problem_json"`
	RetryAfterOn409  Tri    `yaml:"retry_after_on_409" json:"retry_after_on_409"`
	Cache5xx         Tri    `yaml:"cache_5xx" json:"cache_5xx"`
	Cache4xxBusiness Tri    `yaml:"cache_4xx_business" json:"cache_4xx_business"`
	CacheValidation  Tri    `yaml:"cache_validation" json:"cache_validation"`
	ScopeEndpoint    string `yaml:"scope_endpoint" json:"scope_endpoint"`
	// ScopeUser is "isolated" in every known profile (trap C15).
	ScopeUser string `yaml:"scope_user" json:"scope_user"`
	// Key length limits; 0 = not published.
	KeyMaxLen int `yaml:"key_max_len" json:"key_max_len"`
	KeyMinLen int `yaml:"key_min_len" json:"key_min_len"`
	// BlankKey: what the API does with a key of spaces only (BlankReject,
	// BlankAccept, BlankUnknown); syntax/empty-key judges it only when
	// the profile says reject.
	BlankKey string `yaml:"blank_key" json:"blank_key"`
	// KeyCase: whether keys differing only in letter case are distinct
	// (KeyCaseSensitive), one key (KeyCaseFolded) or unknown; judged by
	// scope/case-sensitive.
	KeyCase string `yaml:"key_case" json:"key_case"`
	// KeyFormat is the key form the API accepts: "" (any), "uuid" (a bare
	// 36-character UUID), or a regular expression the whole key must
	// match. The generator obeys it; cases that send special keys respect
	// it or skip saying why, and a key breaking it is an invalid key.
	KeyFormat string `yaml:"key_format" json:"key_format,omitempty"`
	// CanonicalJSON: key order and whitespace do not change the fingerprint.
	CanonicalJSON Tri `yaml:"canonical_json" json:"canonical_json"`
	// VolatileFields: RFC 6901 pointers of body fields left out of the
	// fingerprint.
	VolatileFields []string `yaml:"volatile_fields" json:"volatile_fields,omitempty"`
	// BurstRounds and BurstSize shape concurrent/same-key-burst: rounds of
	// size same-key requests (a fresh key per round) released together.
	// 0 means the defaults (DefaultBurstRounds, DefaultBurstSize), sized so
	// that a 1 ms check-then-insert window on the reference is caught in at
	// least 99 of 100 runs (docs/conformance-engine.md).
	BurstRounds int `yaml:"burst_rounds" json:"burst_rounds,omitempty"`
	BurstSize   int `yaml:"burst_size" json:"burst_size,omitempty"`
	// BurstSync is how a burst's requests are released: last-byte (the
	// default, "": last-byte synchronisation, SyncLastByte, falling back to
	// the barrier where it cannot) or barrier (SyncBarrier).
	BurstSync string `yaml:"burst_sync" json:"burst_sync,omitempty"`
	// StaleReplayOnMismatch (IK-MISMATCH-5): a changed payload under a used
	// key gets the old response replayed, with no error and no execution.
	// The draft, Stripe and the seeds rules make that a failure (false);
	// some servers do it by design (Powertools without payload validation):
	// true accepts it, "?" records it as a finding. An execution of the
	// changed payload fails whatever the setting.
	StaleReplayOnMismatch Tri `yaml:"stale_replay_on_mismatch" json:"stale_replay_on_mismatch"`
	// QueryMismatch: what answers a mutation of the query under a used key
	// (QueryReject, QueryFresh, QueryEither).
	QueryMismatch string `yaml:"query_mismatch" json:"query_mismatch"`
	Expiry        string `yaml:"expiry" json:"expiry"`
	// Margin before the TTL where a replay is still asserted; Grace after
	// it where freshness is asserted (trap C9: expiry is a floor).
	Margin time.Duration `yaml:"margin" json:"margin"`
	Grace  time.Duration `yaml:"grace" json:"grace"`

	// overridden are the fields the config's profile.overrides set, by
	// yaml name (Overridden).
	overridden map[string]bool
}

// Overridden reports whether the config's profile.overrides set field
// (its yaml name): a value the run may not replace with what it learns
// (a gRPC key field's annotations).
func (p *Profile) Overridden(field string) bool { return p.overridden[field] }

// DefaultProfile is the preset used when none is named.
const DefaultProfile = "ietf"

// ProfileNames lists the presets.
func ProfileNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ProfileByName returns a copy of a preset ("" means DefaultProfile).
func ProfileByName(name string) (*Profile, error) {
	if name == "" {
		name = DefaultProfile
	}
	p, ok := presets[name]
	if !ok {
		return nil, fmt.Errorf("unknown profile %q (valid: %s)", name, strings.Join(ProfileNames(), ", "))
	}
	p.Name = name
	p.MissingStatus = append([]int(nil), p.MissingStatus...)
	p.MismatchStatus = append([]int(nil), p.MismatchStatus...)
	p.InFlightStatus = append([]int(nil), p.InFlightStatus...)
	p.VolatileFields = append([]string(nil), p.VolatileFields...)
	p.ReplayMetadata = append([]string(nil), p.ReplayMetadata...)
	return &p, nil
}

// Validate checks the profile's values; the error names the field.
func (p *Profile) Validate() error {
	switch p.KeySyntax {
	case SFString, Raw:
	default:
		return fmt.Errorf("profile key_syntax %q: want sf-string or raw", p.KeySyntax)
	}
	for _, f := range []struct {
		name string
		v    []int
	}{{"missing_status", p.MissingStatus}, {"mismatch_status", p.MismatchStatus}, {"in_flight_status", p.InFlightStatus}} {
		for _, s := range f.v {
			if h := HTTPStatusOf(s); h < 400 || h > 599 {
				return fmt.Errorf("profile %s: %s is not an error status (400-599)", f.name, StatusName(s))
			}
		}
	}
	for _, f := range []struct {
		name string
		v    Tri
	}{{"key_required", p.KeyRequired}, {"problem_json", p.ProblemJSON}, {"retry_after_on_409", p.RetryAfterOn409},
		{"cache_5xx", p.Cache5xx}, {"cache_4xx_business", p.Cache4xxBusiness}, {"cache_validation", p.CacheValidation},
		{"canonical_json", p.CanonicalJSON}, {"stale_replay_on_mismatch", p.StaleReplayOnMismatch}, {"replay_credentials", p.ReplayCredentials},
		{"retry_completes", p.RetryCompletes}} {
		switch f.v {
		case Yes, No, Unknown:
		default:
			return fmt.Errorf("profile %s %q: want true, false or \"?\"", f.name, f.v)
		}
	}
	if p.ReplayHeaderValue != "" && p.ReplayHeader == "" {
		return fmt.Errorf("profile replay_header_value %q set without replay_header", p.ReplayHeaderValue)
	}
	switch p.Replay {
	case "", ReplayStored, ReplayCurrentState:
	default:
		return fmt.Errorf("profile replay %q: want stored or current-state", p.Replay)
	}
	switch p.ReplayCompare {
	case CompareBytes, CompareJSON, CompareStatus:
	default:
		return fmt.Errorf("profile replay_compare %q: want bytes, json or status", p.ReplayCompare)
	}
	if p.ReplayBinary && p.ReplayCompare == CompareStatus {
		return fmt.Errorf("profile replay_binary: compares a replay's message, and replay_compare status compares none")
	}
	for _, m := range p.ReplayMetadata {
		if !validFieldName(m) {
			return fmt.Errorf("profile replay_metadata %q: not a metadata key or header field name", m)
		}
	}
	switch p.ScopeEndpoint {
	case ScopeIndependent, ScopeError, ScopeUnknown:
	default:
		return fmt.Errorf("profile scope_endpoint %q: want independent, error or unknown", p.ScopeEndpoint)
	}
	if p.ScopeUser != "isolated" {
		return fmt.Errorf("profile scope_user %q: only \"isolated\" is supported (a shared key space leaks data, trap C15)", p.ScopeUser)
	}
	switch p.BlankKey {
	case BlankReject, BlankAccept, BlankUnknown:
	default:
		return fmt.Errorf("profile blank_key %q: want reject, accept or \"?\"", p.BlankKey)
	}
	switch p.KeyCase {
	case KeyCaseSensitive, KeyCaseFolded, KeyCaseUnknown:
	default:
		return fmt.Errorf("profile key_case %q: want sensitive, folded or \"?\"", p.KeyCase)
	}
	switch p.QueryMismatch {
	case QueryReject, QueryFresh, QueryEither:
	default:
		return fmt.Errorf("profile query_mismatch %q: want reject, fresh or either", p.QueryMismatch)
	}
	switch p.FailedKey {
	case "", FailedKeyReleased, FailedKeyLocked:
	default:
		return fmt.Errorf("profile failed_key %q: want released or locked-until-expiry", p.FailedKey)
	}
	switch p.LargeReplay {
	case "", LargeReplayed, LargeTombstone:
	default:
		return fmt.Errorf("profile large_replay %q: want replayed or tombstone", p.LargeReplay)
	}
	switch p.Expiry {
	case ExpiryFresh, ExpiryExpired409, ExpiryUnknown:
	default:
		return fmt.Errorf("profile expiry %q: want fresh, expired-409 or unknown", p.Expiry)
	}
	if p.BurstRounds < 0 || p.BurstRounds > maxBurstRounds {
		return fmt.Errorf("profile burst_rounds %d: want 0 (default %d) to %d", p.BurstRounds, DefaultBurstRounds, maxBurstRounds)
	}
	if p.BurstSize != 0 && (p.BurstSize < 2 || p.BurstSize > maxBurstSize) {
		return fmt.Errorf("profile burst_size %d: want 0 (default %d) or 2 to %d", p.BurstSize, DefaultBurstSize, maxBurstSize)
	}
	if p.BurstSync != "" && p.BurstSync != SyncLastByte && p.BurstSync != SyncBarrier {
		return fmt.Errorf("profile burst_sync %q: want last-byte (default) or barrier", p.BurstSync)
	}
	if err := p.validKeyFormat(); err != nil {
		return err
	}
	if p.KeyMaxLen < 0 || p.KeyMinLen < 0 || (p.KeyMaxLen > 0 && p.KeyMinLen > p.KeyMaxLen) {
		return fmt.Errorf("profile key_min_len %d / key_max_len %d: want 0 <= min <= max", p.KeyMinLen, p.KeyMaxLen)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"max_block", p.MaxBlock}, {"margin", p.Margin}, {"grace", p.Grace}} {
		if d.v < 0 {
			return fmt.Errorf("profile %s %s: must not be negative", d.name, d.v)
		}
	}
	if p.BlockOK && p.MaxBlock <= 0 {
		return fmt.Errorf("profile max_block: must be positive when block_ok is true")
	}
	for _, ptr := range p.VolatileFields {
		if _, err := jsonx.ParsePointer(ptr); err != nil {
			return fmt.Errorf("profile volatile_fields %q: %v", ptr, err)
		}
	}
	return nil
}

// KeyFormatUUID is the key_format of APIs that accept only bare UUIDs.
const KeyFormatUUID = "uuid"

var uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// keyForms are the shapes of fresh keys the generator can give, tried in
// order until one matches key_format. Each is made of two UUIDs (u, v; only
// the longest form uses v), so a fresh pair gives a fresh key and a pair
// derived from a key gives the same key every time (Profile.Shape).
var keyForms = []struct {
	name string
	gen  func(u, v uuid.UUID) string
}{
	{"a UUID", func(u, _ uuid.UUID) string { return u.String() }},
	{"32 hex digits", func(u, _ uuid.UUID) string { return hex32(u) }},
	{"an upper-case UUID", func(u, _ uuid.UUID) string { return strings.ToUpper(u.String()) }},
	{"32 upper-case hex digits", func(u, _ uuid.UUID) string { return strings.ToUpper(hex32(u)) }},
	{"idemcheck-<UUID>", func(u, _ uuid.UUID) string { return "idemcheck-" + u.String() }},
	{"idemcheck_<32 hex>", func(u, _ uuid.UUID) string { return "idemcheck_" + hex32(u) }},
	{"64 hex digits", func(u, v uuid.UUID) string { return hex32(u) + hex32(v) }},
}

func hex32(u uuid.UUID) string { return hex.EncodeToString(u[:]) }

// keyMatcher compiles key_format; nil when no format is declared.
func (p *Profile) keyMatcher() (*regexp.Regexp, error) {
	switch p.KeyFormat {
	case "":
		return nil, nil
	case KeyFormatUUID:
		return uuidRe, nil
	}
	return regexp.Compile(`^(?:` + p.KeyFormat + `)$`)
}

func (p *Profile) validKeyFormat() error {
	re, err := p.keyMatcher()
	if err != nil {
		return fmt.Errorf("profile key_format %q: want uuid or a regular expression: %v", p.KeyFormat, err)
	}
	if re == nil {
		return nil
	}
	names := make([]string, len(keyForms))
	for i, f := range keyForms {
		if re.MatchString(f.gen(uuid.New(), uuid.New())) {
			return nil
		}
		names[i] = f.name
	}
	return fmt.Errorf("profile key_format %q: no key idemcheck can generate matches it (it generates %s)", p.KeyFormat, strings.Join(names, ", "))
}

// KeyValid reports whether k obeys key_format (always, when none is
// declared or it does not compile).
func (p *Profile) KeyValid(k string) bool {
	re, err := p.keyMatcher()
	return err != nil || re == nil || re.MatchString(k)
}

// NewKey returns a fresh key in the first generated form that obeys
// key_format: a UUID when no format is declared.
func (p *Profile) NewKey() string {
	return p.form(uuid.New(), uuid.New())
}

// form is the first key form made of u and v that obeys key_format.
func (p *Profile) form(u, v uuid.UUID) string {
	re, err := p.keyMatcher()
	if err != nil || re == nil {
		return u.String()
	}
	for _, f := range keyForms {
		if k := f.gen(u, v); re.MatchString(k) {
			return k
		}
	}
	return u.String() // Validate rejects such a format
}

// Shape returns k when it obeys key_format, else the key of the first
// obeying form derived from k's SHA-256 (version-4 shaped UUIDs): the same
// k always gives the same key and distinct ones distinct keys, so hashed
// business-id keys (--hash-keys) and the load runner's sequence keys keep
// their meaning under an API's key format.
func (p *Profile) Shape(k string) string {
	re, err := p.keyMatcher()
	if err != nil || re == nil || re.MatchString(k) {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	var u, v uuid.UUID
	copy(u[:], sum[:16])
	copy(v[:], sum[16:])
	for _, w := range []*uuid.UUID{&u, &v} {
		w[6] = w[6]&0x0f | 0x40 // version 4
		w[8] = w[8]&0x3f | 0x80 // RFC 9562 variant
	}
	return p.form(u, v)
}

// ShapedKeys makes gen's keys obey key_format (Shape); gen itself when the
// profile declares none.
func (p *Profile) ShapedKeys(gen KeyGen) KeyGen {
	if p.KeyFormat == "" {
		return gen
	}
	return func(n uint64) string { return p.Shape(gen(n)) }
}

// Burst defaults and bounds (see Profile.BurstRounds).
const (
	DefaultBurstRounds = 8
	DefaultBurstSize   = 32
	maxBurstRounds     = 100
	maxBurstSize       = 256
)

// Burst returns the rounds and size of concurrent/same-key-burst.
func (p *Profile) Burst() (rounds, size int) {
	rounds, size = p.BurstRounds, p.BurstSize
	if rounds == 0 {
		rounds = DefaultBurstRounds
	}
	if size == 0 {
		size = DefaultBurstSize
	}
	return rounds, size
}

// Burst synchronisation (Profile.BurstSync): how a same-key burst's
// requests are released.
const (
	// SyncLastByte writes every request but its last byte, each on its own
	// open connection (HTTP/1.1) or as streams of one connection (HTTP/2,
	// where TLS negotiates it), then releases the last bytes together: one
	// write per connection, in a tight loop (HTTP/1.1), or one write of
	// every stream's final frame (HTTP/2, the "single-packet attack").
	// Every request is then past header parsing, into the handler, when the
	// bodies complete: the spread is the last bytes', not the scheduler's.
	SyncLastByte = "last-byte"
	// SyncBarrier releases goroutines at a barrier over warmed pooled
	// connections; requests reach the server spread over the scheduler's
	// and the network's jitter.
	SyncBarrier = "barrier"
)

// ReplayForm is what a replay's body must repeat of its original's under
// replay_compare mode, as bytes two bodies share exactly when they count
// as the same: the body itself (bytes), its JSON document in a canonical
// encoding (json: member order, whitespace and the spelling of a number
// do not count, 1.0 = 1; a body that is not JSON stands for itself), or nothing (status). SameResponse
// compares these forms, and the load checker hashes them: one rule.
func ReplayForm(mode string, body []byte) []byte {
	switch mode {
	case CompareStatus:
		return nil
	case CompareBytes:
		return body
	}
	if c, err := jsonx.Canonical(body); err == nil {
		return c // valid JSON: never equal to a body that is not
	}
	return body
}

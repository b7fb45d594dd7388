package initconfig

import (
	"fmt"
	"slices"

	"github.com/idemcheck/idemcheck/apispec"
)

// openField is a profile field that, left open by the preset, turns its
// cases into a skip ("profile leaves … unspecified; finding recorded"):
// on a passing run nothing would say they never judged.
type openField struct {
	name string
	open func(*apispec.Profile) bool
	line string // the commented override: a value and what decides it
	// httpOnly: a field of HTTP answers (a header), which a gRPC answer
	// has no use for.
	httpOnly bool
}

var openFields = []openField{
	{"key_required", func(p *apispec.Profile) bool { return p.KeyRequired == apispec.Unknown },
		"key_required: true  # TODO: true if a request without a key is refused, false if it executes (missing/rejected, missing/optional-executes)", false},
	{"key_max_len", func(p *apispec.Profile) bool { return p.KeyMaxLen == 0 },
		"key_max_len: 255  # TODO: the longest key the API accepts, without quotes (syntax/max-length, security/invalid-format-rejected)", false},
	{"key_case", func(p *apispec.Profile) bool { return p.KeyCase == apispec.KeyCaseUnknown },
		"key_case: sensitive  # TODO: or folded, if the API folds key case before its lookup (scope/case-sensitive)", false},
	{"replay_header", func(p *apispec.Profile) bool { return p.ReplayHeader == "" },
		`replay_header: Idempotent-Replayed  # TODO: the header marking a replay, "" if none (replay/marker-header)`, true},
	{"problem_json", func(p *apispec.Profile) bool { return p.ProblemJSON == apispec.Unknown },
		"problem_json: true  # TODO: if errors are application/problem+json (problem/problem-json)", true},
	{"retry_after_on_409", func(p *apispec.Profile) bool { return p.RetryAfterOn409 == apispec.Unknown },
		"retry_after_on_409: true  # TODO: if an in-flight 409 carries Retry-After (concurrent/retry-after)", true},
	{"scope_endpoint", func(p *apispec.Profile) bool { return p.ScopeEndpoint == apispec.ScopeUnknown },
		"scope_endpoint: independent  # TODO: or error: one key on another operation is a new key, or refused (scope/other-endpoint)", false},
	{"stale_replay_on_mismatch", func(p *apispec.Profile) bool { return p.StaleReplayOnMismatch == apispec.Unknown },
		"stale_replay_on_mismatch: false  # TODO: true if a changed request under a used key gets the first response (mismatch/changed-body)", false},
	{"cache_5xx", func(p *apispec.Profile) bool { return p.Cache5xx == apispec.Unknown },
		"cache_5xx: false  # TODO: true if a 5xx is stored and replayed (errors/transient-5xx, errors/failure-releases-key)", false},
	{"cache_4xx_business", func(p *apispec.Profile) bool { return p.Cache4xxBusiness == apispec.Unknown },
		"cache_4xx_business: true  # TODO: false if a business error (402) is not stored (replay/business-error, errors/business-error-kept)", false},
	{"cache_validation", func(p *apispec.Profile) bool { return p.CacheValidation == apispec.Unknown },
		"cache_validation: false  # TODO: true if a validation error is stored under its key (errors/validation-not-stored)", false},
	{"expiry", func(p *apispec.Profile) bool { return p.Expiry == apispec.ExpiryUnknown },
		"expiry: fresh  # TODO: or expired-409: what a key gets after the ttl (expiry/fresh-after-ttl)", false},
}

// openLines are the commented overrides of every field preset leaves open
// and set does not name (over gRPC, no HTTP-only one).
func openLines(preset string, grpc bool, set func(field string) bool) []string {
	p, err := apispec.ProfileByName(preset)
	if err != nil {
		return []string{fmt.Sprintf("TODO: preset %q: %v", preset, err)}
	}
	var lines []string
	for _, f := range openFields {
		if f.open(p) && !set(f.name) && !(grpc && f.httpOnly) {
			lines = append(lines, f.line)
		}
	}
	return lines
}

// footOpenFields writes openLines after the profile: below the last
// override, or under a commented overrides: when none is written.
func footOpenFields(prof mapping, preset string, ov mapping) {
	keys := map[string]bool{}
	for i := 0; i+1 < len(ov.n.Content); i += 2 {
		keys[ov.n.Content[i].Value] = true
	}
	lines := openLines(preset, false, func(f string) bool { return keys[f] })
	if len(lines) == 0 {
		return
	}
	lines = slices.Insert(lines, 0, "TODO: fields the preset leaves open: each one's cases skip (a finding, no verdict) until it is set.")
	if len(ov.n.Content) > 0 {
		foot(ov.n.Content[len(ov.n.Content)-2], lines...)
		return
	}
	commented := []string{lines[0], "overrides:"}
	for _, l := range lines[1:] {
		commented = append(commented, "  "+l)
	}
	foot(prof.n.Content[len(prof.n.Content)-2], commented...)
}

// sharedIDLines replace an id pointer whose value the answers share (an
// update names the resource it changed, every time): equal ids there
// prove no replay and no leak, so init writes none and proposes the
// operation's own oracle instead, commented.
func sharedIDLines(ptr, why, keyColumn string) []string {
	return []string{
		fmt.Sprintf("TODO: no id_pointer: %s %s, so an equal id proves neither a replay nor a leak. Count this", ptr, why),
		"operation's executions with its own oracle (" + evidenceDoc + "): its table, a list endpoint or the double.",
		"oracle:",
		fmt.Sprintf(`  sql: {dsn: "${DATABASE_URL}", query: "select count(*) from TODO where %s = $1"}`, keyColumn),
	}
}

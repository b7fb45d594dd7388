package scenarios

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// NeedEffects: a way to count executions, the oracle or created-id
// identity (trap C2). Without it effect-counting cases are unverifiable.
const NeedEffects Need = "effects"

// Case is one conformance check. PerOperation cases run once per
// configured operation (Env.Op set); the others once per run with the
// first operation as their subject.
type Case struct {
	Meta
	PerOperation bool
	// UsesOracle: the case asks the oracle (Env.Executions, Effects,
	// Replayed, HasOracle) when there is one, though it does not need one
	// (Needs lacks NeedOracle and NeedEffects). It decides the oracle mode
	// idemcheck list shows, and which instances a broken oracle makes
	// inconclusive.
	UsesOracle bool
	// Skips, when set, says why the case does not apply to op under t and
	// p before any request is sent ("" when it applies): the profile
	// does not require the behaviour, or the declared TTL is too short for
	// the case. The plan applies it, so idemcheck list forecasts the skips
	// of a run.
	Skips func(t *apispec.Target, p *apispec.Profile, op *apispec.Operation) string
	// Unfit, when set, says why the case does not apply over the run's
	// carrier to the target at all (applies.go): it asks the carrier's
	// capabilities, never its name. The plan applies it before Needs.
	Unfit Unfit
	// MinTTL, when set, is the least declared TTL with which the case
	// judges op (and what it needs it for): under a shorter one every
	// verdict it could reach would be inconclusive, so the plan skips it,
	// naming the TTL that would run it.
	MinTTL func(t *apispec.Target, p *apispec.Profile, op *apispec.Operation) (need time.Duration, why string)
	// Peer, when set, is the other operation the case sends op's key to
	// (nil: none fits): the run checks the oracle on it too, and the
	// case judges those requests by its evidence.
	Peer func(t *apispec.Target, op *apispec.Operation) *apispec.Operation
	// Proof says which answers prove what the case expects (proof.go):
	// set on every case that expects a refusal or a fresh execution, and
	// on those the profile's mismatch or in-flight answer proves. A pass
	// resting on a signal it does not name is held (provenVerdict).
	Proof Proof
	Run   func(ctx context.Context, e *Env) Verdict
}

// Verdict is what a case concluded.
type Verdict struct {
	Status   Status
	Expected string
	Observed string
	Reason   string
	// Missed: inconclusive because the timing the case needs did not
	// happen (an overlap missed, a stall past a declared clock): another
	// attempt under fresh keys may decide it (RunOptions.Attempts).
	Missed bool
}

var (
	catalogMu sync.Mutex
	catalog   = map[string]Case{}
)

// register adds cases to the catalog; each family file calls it from init.
// A duplicate ID or a case without its metadata is a programming error.
func register(cs ...Case) {
	catalogMu.Lock()
	defer catalogMu.Unlock()
	for _, c := range cs {
		if c.ID == "" || c.Family == "" || c.Level == "" || c.Requirement == "" || c.Explanation == "" || len(c.Requirements) == 0 || c.Run == nil {
			panic(fmt.Sprintf("scenarios: case %q lacks metadata", c.ID))
		}
		if _, dup := catalog[c.ID]; dup {
			panic("scenarios: duplicate case " + c.ID)
		}
		catalog[c.ID] = c
	}
}

// Catalog returns every registered case sorted by ID.
func Catalog() []Case {
	catalogMu.Lock()
	defer catalogMu.Unlock()
	out := make([]Case, 0, len(catalog))
	for _, c := range catalog {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Pass concludes the case passed; observed (optional) says what was seen.
func (e *Env) Pass(observed ...string) Verdict {
	return Verdict{Status: Pass, Observed: join(observed)}
}

// Fail concludes a hard violation whatever the case's level (e.g. a second
// execution).
func (e *Env) Fail(expected, observed string) Verdict {
	return Verdict{Status: Fail, Expected: expected, Observed: observed}
}

// Unmet concludes the case's requirement is not met, at the case's level
// (see unmetAt).
func (e *Env) Unmet(expected, observed string) Verdict {
	return e.unmetAt(e.Case.Level, expected, observed)
}

// unmetAt concludes a requirement of level l is not met: Fail for MUST,
// Warn for SHOULD (Fail under --strict). An unmet MAY or INFO is a finding:
// recorded with what was seen, never a pass and never a warn, so --strict
// does not turn an optional behaviour into a failure.
func (e *Env) unmetAt(l Level, expected, observed string) Verdict {
	switch l {
	case Must:
		return Verdict{Status: Fail, Expected: expected, Observed: observed}
	case May, Info:
		return Verdict{Status: Skip, Expected: expected, Observed: observed, Reason: "finding recorded: " + string(l) + " not met (never a pass, never a warn)"}
	}
	return Verdict{Status: Warn, Expected: expected, Observed: observed}
}

// shouldAside is the verdict of a case whose own requirement held while an
// answer missed a SHOULD that judgedBy (a SHOULD case) decides: in a MUST
// case a pass that records the miss, since a MUST-level warning fails the
// run (Report.Effective) and a legal choice such as 423 in flight must not;
// in a SHOULD case the warning itself.
func (e *Env) shouldAside(expected, observed, judgedBy string) Verdict {
	if e.Case.Level == Must {
		return e.Pass(observed + "; a SHOULD is not met here (expected " + expected + "), judged by " + judgedBy)
	}
	return e.unmetAt(Should, expected, observed)
}

// Warn concludes a SHOULD is unmet (Fail under --strict).
func (e *Env) Warn(expected, observed string) Verdict {
	return Verdict{Status: Warn, Expected: expected, Observed: observed}
}

// Finding reports what was observed where the profile leaves the behaviour
// open ("?"): recorded, never judged.
func (e *Env) Finding(field, observed string) Verdict {
	return Verdict{Status: Skip, Observed: observed, Reason: "profile leaves " + field + " unspecified; finding recorded"}
}

// Inconclusive: the condition the case needs (e.g. an overlap) could not be
// created.
func (e *Env) Inconclusive(reason string) Verdict {
	return Verdict{Status: Inconclusive, Reason: reason}
}

// Missed is Inconclusive for want of timing, not of configuration or
// evidence: the overlap the case engineers was missed, or a stall carried
// a request past a declared clock (TTL, lease). The run tries the case
// again under fresh keys (RunOptions.Attempts); a cause that another
// attempt cannot change (a variant that does not fail, an oracle error)
// is plain Inconclusive.
func (e *Env) Missed(reason string) Verdict {
	return Verdict{Status: Inconclusive, Reason: reason, Missed: true}
}

// Unverifiable: the case cannot decide without an oracle.
func (e *Env) Unverifiable(reason string) Verdict {
	return Verdict{Status: Unverifiable, Reason: reason}
}

// Skip: not applicable under this config or profile.
func (e *Env) Skip(reason string) Verdict {
	return Verdict{Status: Skip, Reason: reason}
}

// join joins observations the way verdict texts separate them.
func join(s []string) string { return strings.Join(s, "; ") }

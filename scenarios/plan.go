package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/idemcheck/idemcheck/apispec"
)

// Planned is one case instance a run would execute.
type Planned struct {
	Meta
	Operation string `json:"operation,omitempty"`
	// Supplied: the config supplies everything the case needs; Missing lists
	// what it lacks.
	Supplied bool   `json:"supplied"`
	Missing  []Need `json:"missing,omitempty"`
	// Skip, when set, is why a supplied instance will be skipped: the
	// profile or the declared TTL (Case.Skips). Runnable instances are
	// supplied and not skipped.
	Skip string `json:"skip,omitempty"`
	// NeedsTTL, when set, is the least declared TTL that would run an
	// instance skipped for a TTL too short (Case.MinTTL).
	NeedsTTL time.Duration `json:"needs_ttl,omitempty"`
	// OracleMode is how the instance counts executions: OraclePerKey,
	// OracleGlobalSerial, OracleIdentity or OracleNone.
	OracleMode string `json:"oracle_mode"`
}

// countsEffects reports whether c asks the oracle (Needs, or UsesOracle).
func countsEffects(c Case) bool {
	return c.UsesOracle || slices.Contains(c.Needs, NeedOracle) || slices.Contains(c.Needs, NeedEffects)
}

// oracleMode is how case c counts executions on op under t.
func oracleMode(t *apispec.Target, op *apispec.Operation, c Case) string {
	switch {
	case !countsEffects(c):
		return OracleNone
	case len(t.Oracles()) > 0 && t.GlobalOracle():
		return OracleGlobalSerial
	case len(t.Oracles()) > 0 || t.Events != nil:
		return OraclePerKey
	case op != nil && hasMarks(op):
		return OracleIdentity
	}
	return OracleNone
}

// Name is the instance's unique name, as Result.Name.
func (p Planned) Name() string { return Result{Meta: p.Meta, Operation: p.Operation}.Name() }

// Runnable reports an instance the run will judge: supplied by the config
// and not skipped by the profile or the TTL.
func (p Planned) Runnable() bool { return p.Supplied && p.Skip == "" }

type instance struct {
	Planned
	c  Case
	op *apispec.Operation
}

// Plan lists the selected case instances in name order.
func Plan(t *apispec.Target, p *apispec.Profile, o RunOptions) ([]Planned, error) {
	if p == nil {
		p, _ = apispec.ProfileByName(apispec.DefaultProfile) // a preset: never an error
	}
	ins, err := plan(t, p, o)
	if err != nil {
		return nil, err
	}
	out := make([]Planned, len(ins))
	for i, in := range ins {
		out[i] = in.Planned
	}
	return out, nil
}

func plan(t *apispec.Target, p *apispec.Profile, o RunOptions) ([]instance, error) {
	runG, err := compileGlobs("run", o.Run)
	if err != nil {
		return nil, err
	}
	skipG, err := compileGlobs("skip", o.Skip)
	if err != nil {
		return nil, err
	}
	var out []instance
	car := carrierOf(t)
	for _, c := range Catalog() {
		ops := []*apispec.Operation{nil}
		if c.PerOperation {
			ops = ops[:0]
			for i := range t.Operations {
				ops = append(ops, &t.Operations[i])
			}
		}
		for _, op := range ops {
			in := instance{c: c, op: op, Planned: Planned{Meta: carrierMeta(car, t, p, c)}}
			if op != nil {
				in.Operation = op.Name
			} else if len(t.Operations) > 0 {
				in.op = &t.Operations[0] // the subject of a run-wide case
			}
			subject := in.op
			name := in.Name()
			if (len(runG) > 0 && !matchAny(runG, name, c.ID)) || matchAny(skipG, name, c.ID) {
				continue
			}
			for _, n := range c.Needs {
				if !suppliesFor(t, subject, n) {
					in.Missing = append(in.Missing, n)
				}
			}
			carrierSkip := c.unfit(car, t)
			if carrierSkip != "" {
				in.Missing = nil // no config entry runs it here: the skip says why, not a need
			}
			in.Supplied = len(in.Missing) == 0
			if in.Supplied {
				in.Skip = carrierSkip
			}
			if in.Supplied && in.Skip == "" && c.Skips != nil {
				in.Skip = c.Skips(t, p, subject)
			}
			if in.Supplied && in.Skip == "" && c.MinTTL != nil && t.TTL > 0 {
				if need, why := c.MinTTL(t, p, subject); t.TTL < need {
					need = (need + 99*time.Millisecond).Truncate(100 * time.Millisecond) // up: the skip names a TTL that runs the case
					in.Skip = fmt.Sprintf("declared ttl %s is too short for this case: needs ttl ≥ %s (%s)", t.TTL, need, why)
					in.NeedsTTL = need
				}
			}
			in.OracleMode = oracleMode(t, subject, c)
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// compileGlobs checks globs in doublestar's syntax (the one of .gitignore
// and editors): '*' and '?' stay within a segment, a '**' segment crosses
// segments, [...] is a character class, {a,b} alternatives.
func compileGlobs(flag string, globs []string) ([]string, error) {
	for _, g := range globs {
		if g == "" {
			return nil, fmt.Errorf("--%s: empty pattern", flag)
		}
		if !doublestar.ValidatePattern(g) {
			return nil, fmt.Errorf("--%s %q: %v", flag, g, doublestar.ErrBadPattern)
		}
	}
	return globs, nil
}

func matchAny(globs []string, names ...string) bool {
	for _, g := range globs {
		for _, n := range names {
			// The pattern was validated by compileGlobs.
			if ok, _ := doublestar.Match(g, n); ok {
				return true
			}
		}
	}
	return false
}

// Oracle modes (Planned.OracleMode).
const (
	// OraclePerKey: the oracle counts executions per key.
	OraclePerKey = "per-key"
	// OracleGlobalSerial: a global counter, read around each key's
	// requests; the run is serial so nothing else moves it.
	OracleGlobalSerial = "global-serial"
	// OracleIdentity: no oracle; distinct created ids are a lower bound.
	OracleIdentity = "identity"
	// OracleNone: the case counts nothing, or nothing can count.
	OracleNone = "none"
)

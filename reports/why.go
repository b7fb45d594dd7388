package reports

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/idemcheck/idemcheck/scenarios"
)

// observation is a result's finding in one line: its reason, and what was
// expected vs observed unless the reason already says it. A warning line
// without it says that a SHOULD is unmet but not what the API did.
func observation(r scenarios.Result) string {
	obs := ""
	if r.Observed != "" {
		obs = "observed " + r.Observed
		if r.Expected != "" {
			obs = "expected " + r.Expected + ", " + obs
		}
	}
	switch {
	case obs == "":
		return oneLine(r.Reason)
	case r.Reason == "":
		return oneLine(obs)
	case strings.Contains(r.Reason, r.Observed):
		return oneLine(r.Reason)
	}
	return oneLine(r.Reason + " (" + obs + ")")
}

// skipGroup is one reason shared by skipped instances, with the cases it
// skipped (in report order) and the config entries that would run them.
type skipGroup struct {
	Reason    string
	Config    []string // config keys that supply what they miss (Missing)
	Cases     []string // case IDs, or case@operation when the reason skipped only some operations
	Instances int
}

// maxGroupCases bounds the cases a grouped skip line names.
const maxGroupCases = 8

// skipGroups groups the run's skips by reason, most instances first: one
// line per reason says why a dozen cases did not run, and what to add.
func skipGroups(rep *scenarios.Report) []skipGroup {
	var groups []skipGroup
	idx := map[string]int{}
	// ops[reason][case] counts the case's instances skipped for the reason.
	ops := map[string]map[string][]string{}
	perCase := map[string]int{}
	for _, r := range rep.Results {
		perCase[r.ID]++
	}
	for _, r := range rep.Results {
		if v := rep.Effective(r); v.Status != scenarios.Skip || v.Expected {
			continue
		}
		i, ok := idx[r.Reason]
		if !ok {
			i = len(groups)
			idx[r.Reason] = i
			g := skipGroup{Reason: r.Reason}
			for _, n := range r.Missing {
				g.Config = append(g.Config, configKey(n))
			}
			groups = append(groups, g)
			ops[r.Reason] = map[string][]string{}
		}
		g := &groups[i]
		g.Instances++
		if _, seen := ops[r.Reason][r.ID]; !seen {
			g.Cases = append(g.Cases, r.ID)
		}
		ops[r.Reason][r.ID] = append(ops[r.Reason][r.ID], r.Name())
	}
	for i := range groups {
		g := &groups[i]
		var names []string
		for _, id := range g.Cases {
			if names1 := ops[g.Reason][id]; len(names1) < perCase[id] {
				names = append(names, names1...)
			} else {
				names = append(names, id)
			}
		}
		g.Cases = names
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].Instances > groups[j].Instances })
	return groups
}

// line is the group as the console prints it: "skip  6 cases: config
// does not supply: replicas (config: replicas) — replicas/burst-across, ...".
func (g skipGroup) line() string {
	noun := "cases"
	if len(g.Cases) == 1 {
		noun = "case"
	}
	reason := oneLine(g.Reason)
	if reason == "" {
		reason = "no reason given"
	}
	if len(g.Config) > 0 {
		reason += " (config: " + strings.Join(g.Config, ", ") + ")"
	}
	names := g.Cases
	more := ""
	if len(names) > maxGroupCases {
		more = fmt.Sprintf(", and %d more", len(names)-maxGroupCases)
		names = names[:maxGroupCases]
	}
	return fmt.Sprintf("skip %3d %s: %s — %s%s", len(g.Cases), noun, reason, strings.Join(names, ", "), more)
}

// configKey is the config entry that supplies a need: the key of its
// one-line hint ("operations[].variants.slow", "replicas").
func configKey(n scenarios.Need) string {
	key, _, _ := strings.Cut(n.ConfigHint(), ":")
	return key
}

// nextLevelText says in one sentence what stands between a run at
// draft-07 core and draft-07 full: the SHOULD requirements no instance
// verified, by what would test them: config entries the run lacks,
// profile fields that leave the behaviour open, evidence the run could
// not get, behaviour the API showed, or the case's own reason. "" when
// the run is not at core with a blocker.
func nextLevelText(rep *scenarios.Report, c scenarios.Conformance) string {
	if c.Level != scenarios.LevelCore || c.Blocker == "" {
		return ""
	}
	// Per SHOULD requirement, the instance closest to verifying it: a
	// pass settles it; otherwise the first of each kind.
	type state struct {
		pass bool
		by   scenarios.Result
	}
	reqs := map[string]*state{}
	var order []string
	for _, r := range rep.Results {
		if r.Level != scenarios.Should || scenarios.DoesNotApply(r) {
			continue
		}
		for _, id := range r.Requirements {
			s := reqs[id]
			if s == nil {
				s = &state{by: r}
				reqs[id] = s
				order = append(order, id)
			}
			s.pass = s.pass || r.Status == scenarios.Pass
			// A violation or missing evidence says more than a skip.
			if r.Status != scenarios.Skip && s.by.Status == scenarios.Skip {
				s.by = r
			}
		}
	}
	var config, profile, evidence, api, other []string
	addOnce := func(list *[]string, s string) {
		if !slices.Contains(*list, s) {
			*list = append(*list, s)
		}
	}
	n := 0
	for _, id := range order {
		s := reqs[id]
		if s.pass {
			continue
		}
		n++
		r := s.by
		switch {
		case r.Status == scenarios.Warn || r.Status == scenarios.Fail:
			addOnce(&api, fmt.Sprintf("%s (%s %s)", id, r.Name(), r.Status))
		case r.Status == scenarios.Unverifiable || r.Status == scenarios.Inconclusive || r.Status == scenarios.Interrupted:
			addOnce(&evidence, fmt.Sprintf("%s (%s %s)", id, r.ID, r.Status))
		case len(r.Missing) > 0:
			for _, need := range r.Missing {
				addOnce(&config, configKey(need))
			}
		case strings.HasPrefix(r.Reason, "profile "):
			f := strings.Fields(r.Reason)
			field := f[1]
			if field == "leaves" && len(f) > 2 {
				field = f[2]
			}
			addOnce(&profile, field)
		default:
			addOnce(&other, fmt.Sprintf("%s (%s: %s)", id, r.ID, r.Reason))
		}
	}
	var parts []string
	if len(config) > 0 {
		sort.Strings(config)
		parts = append(parts, "the config lacks "+strings.Join(config, ", "))
	}
	if len(profile) > 0 {
		parts = append(parts, "the profile leaves open "+strings.Join(profile, ", "))
	}
	if len(evidence) > 0 {
		parts = append(parts, "no evidence for "+strings.Join(evidence, ", "))
	}
	if len(api) > 0 {
		parts = append(parts, "the API does not meet "+strings.Join(api, ", "))
	}
	if len(other) > 0 {
		parts = append(parts, "other cases say why: "+strings.Join(other, ", "))
	}
	return fmt.Sprintf("%s needs %d more SHOULD requirements verified: %s", scenarios.LevelFull, n, strings.Join(parts, "; "))
}

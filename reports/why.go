package reports

import (
	"fmt"
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

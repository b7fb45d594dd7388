package scenarios

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// uniquePrefix returns a short run-unique key prefix.
func (e *Env) uniquePrefix(tag string) string {
	return tag + strings.ReplaceAll(e.NewKey(), "-", "")[:12]
}

// otherForm writes k in the syntax the target does not use.
func (e *Env) otherForm(k string) string {
	if e.Target.KeySyntax == apispec.Raw {
		return `"` + k + `"`
	}
	return k
}

// judgeInvalidKeys sends each invalid key field and expects a 4xx. A 5xx
// fails; an execution is an unmet SHOULD (or a finding when the profile
// lets the server ignore the field as a missing key).
func (e *Env) judgeInvalidKeys(ctx context.Context, what string, lines map[string][]string) Verdict {
	var accepted, errs, seen []string
	for _, name := range sortedKeys(lines) {
		r := e.Send(ctx, Req{Label: name, KeyLines: lines[name]})
		seen = append(seen, fmt.Sprintf("%s: %s", name, statusOf(r)))
		if v := e.lostConn(r); v != nil {
			return *v
		}
		switch {
		case r.Is5xx() || r.Err != nil:
			errs = append(errs, name)
		case !r.Is4xx():
			accepted = append(accepted, name)
		}
	}
	observed := strings.Join(seen, "; ")
	expected := "a 4xx for every " + what
	switch {
	case len(errs) > 0:
		return e.Fail(expected+", never a 5xx", observed)
	case len(accepted) > 0 && e.Profile.KeyRequired != apispec.Yes:
		return e.Finding("key_required", "accepted or ignored as a missing key: "+observed)
	case len(accepted) > 0:
		return e.Unmet(expected, observed)
	}
	return e.Pass(observed)
}

func statusOf(r wire.Resp) string {
	if r.Err != nil {
		return "error " + r.Err.Error()
	}
	return r.StatusText()
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

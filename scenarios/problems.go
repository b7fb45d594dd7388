package scenarios

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// idempotencyErrors provokes the idempotency errors the config allows: a
// missing key (when required), an invalid key field, a mismatch and, with
// a slow variant, an in-flight conflict. Only 4xx answers are returned;
// what was not obtained is listed in missed.
func (e *Env) idempotencyErrors(ctx context.Context) (errs []idemError, missed []string) {
	add := func(name string, r wire.Resp) {
		if r.Is4xx() {
			errs = append(errs, idemError{name, r})
		} else {
			missed = append(missed, name+" ("+statusOf(r)+")")
		}
	}
	if e.Profile.KeyRequired != apispec.No {
		add("missing key", e.Send(ctx, Req{Label: "no key", NoKey: true}))
	}
	add("invalid key", e.Send(ctx, Req{Label: "two key field lines", KeyLines: []string{e.KeyValue(e.NewKey()), e.KeyValue(e.NewKey())}}))
	if _, mis, _, v := e.mismatchError(ctx, e.NewKey()); v == nil {
		add("mismatch", mis)
	} else {
		missed = append(missed, "mismatch (the normal call failed)")
	}
	if _, ok := e.Op.Variants[apispec.VariantSlow]; ok {
		if _, _, dup, v := e.conflict(ctx); v == nil {
			add("in flight", dup)
		} else {
			missed = append(missed, "in flight ("+v.Reason+")")
		}
	}
	return errs, missed
}

// judgeErrors applies check to each provoked error: a finding when the
// profile leaves problem_json unknown (false skips: skipNoProblemJSON).
func (e *Env) judgeErrors(ctx context.Context, expected string, check func(wire.Resp) (bool, string)) Verdict {
	errs, missed := e.idempotencyErrors(ctx)
	if len(errs) == 0 {
		return e.Inconclusive("no idempotency error could be provoked: " + strings.Join(missed, "; "))
	}
	var seen []string
	allOK := true
	for _, x := range errs {
		ok, how := check(x.r)
		allOK = allOK && ok
		seen = append(seen, fmt.Sprintf("%s %d: %s", x.name, x.r.Status, how))
	}
	observed := strings.Join(seen, "; ")
	if len(missed) > 0 {
		observed += "; not provoked: " + strings.Join(missed, "; ")
	}
	switch {
	case allOK && e.Case.Level == May:
		return e.Pass(observed) // a MAY seen is a MAY met, whatever the profile knew
	case e.Profile.ProblemJSON == apispec.Unknown:
		return e.Finding("problem_json", observed)
	case !allOK:
		return e.Unmet(expected, observed)
	}
	return e.Pass(observed)
}

// idemError is one provoked idempotency error.
type idemError struct {
	name string
	r    wire.Resp
}

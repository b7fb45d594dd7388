package scenarios

import "github.com/idemcheck/idemcheck/apispec"

// Supplies reports whether t supplies n for at least one operation.
func Supplies(t *apispec.Target, n Need) bool {
	for i := range t.Operations {
		if suppliesFor(t, &t.Operations[i], n) {
			return true
		}
	}
	return len(t.Operations) == 0 && suppliesFor(t, nil, n)
}

// suppliesFor reports whether t supplies n for op (nil: a case not tied to
// one operation).
func suppliesFor(t *apispec.Target, op *apispec.Operation, n Need) bool {
	variant := func(name string) bool {
		if op == nil {
			return false
		}
		_, ok := op.Variants[name]
		return ok
	}
	switch n {
	case NeedOracle:
		return t.OracleOf(op) != nil || t.Events != nil // events count when no oracle does
	case NeedEffects:
		return t.OracleOf(op) != nil || t.Events != nil || (op != nil && hasMarks(op))
	case NeedEvents:
		return t.Events != nil
	case NeedFirstSent:
		return t.Key != nil && t.Key.FirstSent
	case NeedIDPointer:
		return op != nil && hasMarks(op)
	case NeedSecondPrincipal:
		return len(t.Principals) >= 2
	case NeedSecondOperation:
		return len(t.Operations) >= 2
	case NeedSlow:
		return variant(apispec.VariantSlow)
	case NeedBusinessError:
		return variant(apispec.VariantBusinessError)
	case NeedTransientError:
		return variant(apispec.VariantTransientError)
	case NeedInvalid:
		return variant(apispec.VariantInvalid)
	case NeedLarge:
		return variant(apispec.VariantLarge)
	case NeedBinary:
		return variant(apispec.VariantBinary)
	case NeedCrash:
		return variant(apispec.VariantCrash)
	case NeedTimeout:
		return variant(apispec.VariantTimeout)
	case NeedTTL:
		// "ttl: never" supplies it too: the expiry cases then record that
		// keys never expire (see Env.neverExpires).
		return t.TTL > 0 || t.NeverExpires
	case NeedLease:
		return t.Lease > 0
	case NeedTargetCmd:
		return t.Command != ""
	case NeedReplicas:
		return len(t.Replicas) >= 2
	}
	return false
}

// NeedEvents: the events: section, where the API's published events are
// read (the outbox/ cases).
const NeedEvents Need = "events"

// NeedTargetCmd: a managed target (target_cmd, --target-cmd) the harness
// can SIGKILL mid-flight and restart. Cases that need it run alone, after
// the concurrent batch, because they take the target down.
const NeedTargetCmd Need = "target-cmd"

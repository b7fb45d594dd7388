package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/wire"
)

// calibrate checks the oracle once per operation that a selected,
// supplied instance counts effects on: a normal request under a fresh key
// must raise the count by exactly 1. It returns the problem found per
// operation name and the notes for the report: one line per problem.
func calibrate(ctx context.Context, s *session, ins []instance) (problems map[string]string, notes []string) {
	t, ev := s.t, s.ev
	problems = map[string]string{}
	if ev == nil {
		return problems, nil
	}
	used := map[string]bool{}
	for _, in := range ins {
		if in.Runnable() && in.op != nil && countsEffects(in.c) {
			for _, op := range touched(t, in) {
				used[op.Name] = true
			}
		}
	}
	for i := range t.Operations {
		op := &t.Operations[i]
		if !used[op.Name] {
			continue
		}
		var problem, note string
		if ev.EventsOnly() {
			// The events are the oracle: their own check says what a
			// wrong topic or key looks like.
			f, several := calibrateEvents(ctx, s, op)
			switch {
			case f != "":
				problem = f + "; effect-counting cases are inconclusive"
			case several != "":
				// The outbox cases judge it; the rest would count each
				// execution more than once.
				problem = several + "; the other effect-counting cases are inconclusive"
				s.severalEvents[op.Name] = true
			}
		} else {
			problem, note = calibrateOp(ctx, s, op)
		}
		if problem != "" {
			problems[op.Name] = problem
			note = problem
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	if n := sharedCounterNote(t, used, problems); n != "" {
		notes = append(notes, n)
	}
	return problems, notes
}

// touched lists the operations in sends requests to: its own and its
// case's Peer (whether or not --run/--skip selected the peer's own
// instances).
func touched(t *apispec.Target, in instance) []*apispec.Operation {
	ops := []*apispec.Operation{in.op}
	if in.c.Peer != nil {
		if o := in.c.Peer(t, in.op); o != nil {
			ops = append(ops, o)
		}
	}
	return ops
}

// sharedCounterNote is the start-up note on one global counter (no
// "{key}") that counts several operations, when the calibration found it
// counting some of them but not others: a counter pointer often counts
// one operation's executions only (pointer /charges). Requests to the
// others are judged by their ids (Env.oracleSees); their own instances
// are inconclusive until they get an oracle.
func sharedCounterNote(t *apispec.Target, checked map[string]bool, problems map[string]string) string {
	o := t.Oracle
	if o == nil || o.PerKey() {
		return ""
	}
	var seen, unseen []string
	for i := range t.Operations {
		switch op := &t.Operations[i]; {
		case op.Oracle != nil || !checked[op.Name]:
		case problems[op.Name] != "":
			unseen = append(unseen, op.Name)
		default:
			seen = append(seen, op.Name)
		}
	}
	if len(seen) == 0 || len(unseen) == 0 {
		return ""
	}
	return fmt.Sprintf("one counter (GET %s, pointer %s) serves every operation: it counts %s, it does not count %s; give each operation its own oracle (operations[].oracle)",
		o.URL, o.Pointer, strings.Join(seen, ", "), strings.Join(unseen, ", "))
}

// checkIDPointers checks each id_pointer (an update's version_pointer) a
// selected, supplied instance relies on before any verdict rests on it:
// two normal requests under two fresh keys must answer a value at the
// pointer, and two different ones. A typo (/id for /order_id) would
// otherwise read as "0 executions" and fail a correct server. The error is
// one line naming the pointer and the body's members. An id that two keys
// share names one existing resource: on a POST (or a declared kind:
// create) that is an error saying what to use instead; on another method
// the operation is learned as an update (kind: update, set on the
// target's operation) and a note says so: its ids are then no evidence of
// a replay, a leak or an execution. An operation whose normal call does
// not succeed is left to the cases (and to the oracle check) to report.
func checkIDPointers(ctx context.Context, s *session, ins []instance) (notes []string, err error) {
	checked := map[string]bool{}
	for _, in := range ins {
		op := in.op
		if !in.Supplied || op == nil || op.IDPointer == "" && op.VersionPointer == "" || checked[op.Name] ||
			!(countsEffects(in.c) || slices.Contains(in.c.Needs, NeedIDPointer)) {
			continue
		}
		checked[op.Name] = true
		note, err := checkIDPointer(ctx, s, op)
		if err != nil {
			return nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	return notes, nil
}

func checkIDPointer(ctx context.Context, s *session, op *apispec.Operation) (note string, err error) {
	t := s.t
	ctx, cancel := context.WithTimeout(ctx, 2*t.Timeout)
	defer cancel()
	e := s.env(ctx, op)
	defer e.drain(ctx)
	i := slices.IndexFunc(t.Operations, func(o apispec.Operation) bool { return o.Name == op.Name })
	field, pointer := "id_pointer", op.IDPointer
	if op.Updates() {
		if op.VersionPointer == "" {
			return "", nil // an update's ids are never read as evidence
		}
		field, pointer = "version_pointer", op.VersionPointer
	}
	at := fmt.Sprintf("operations[%d].%s %s", i, field, pointer)
	var marks []string
	for range 2 {
		k := e.NewKey()
		if e.keyError() != nil {
			return "", nil // the cases report it
		}
		r := e.Send(ctx, Req{Label: field + " check", Key: k})
		if !r.OK() {
			return "", nil
		}
		mark := e.CreatedID(r)
		doc, _ := jsonx.Decode(r.Body)
		switch {
		case mark == "":
			return "", fmt.Errorf("%s: nothing there in the %d body%s%s", at, r.Status, bodyMembers(doc), jsonNameHint(t, pointer))
		case len(marks) == 1 && marks[0] == mark:
			note, err := sharedMark(at, op, has[wire.Methods](carrierOf(t)), mark, bodyMembers(doc))
			if i >= 0 {
				t.Operations[i].Kind = op.Kind // the run's own copy, which a re-plan reads
			}
			return note, err
		}
		marks = append(marks, mark)
	}
	return "", nil
}

// sharedMark is checkIDPointer's answer when two keys' answers carry one
// mark: an error for a version pointer, an HTTP POST or a declared create;
// else (a gRPC method names no verb) op is learned as an update, with the
// note that says so.
func sharedMark(at string, op *apispec.Operation, methods bool, mark, members string) (string, error) {
	switch {
	case op.Updates():
		return "", fmt.Errorf("%s: the same value %q for two keys: not a revision every execution changes%s", at, mark, members)
	case op.Kind == apispec.KindCreate || op.Method == http.MethodPost && methods: // a POST creates where the carrier sends the method
		return "", fmt.Errorf("%s: the same value %q for two keys: not the created resource's id%s; if %s changes one existing resource, say kind: update (with a version_pointer or an oracle to count its executions), or give it a setup: that makes a fresh resource per key", at, mark, members, op.Name)
	}
	op.Kind = apispec.KindUpdate
	return fmt.Sprintf("%s: the same value %q for two keys: %s %s changes one existing resource, judged as kind: update: equal ids are no evidence of a replay, a leak or an execution; executions are counted by the oracle, or by a version_pointer (its revision member) if you add one (say kind: update to silence this note)", at, mark, op.Method, op.Name), nil
}

// jsonNameHint is, for a pointer naming a field as the .proto does
// (payment_id) on a target whose answers are messages rendered as JSON
// (no wire.RawBodies: gRPC's protojson), the pointer by the fields' JSON
// names, which protojson answers with (paymentId); "" otherwise.
func jsonNameHint(t *apispec.Target, p string) string {
	if has[wire.RawBodies](carrierOf(t)) || !strings.Contains(p, "_") {
		return ""
	}
	var b strings.Builder
	upper := false
	for _, r := range p {
		switch {
		case r == '_':
			upper = true
			continue
		case upper && r != '/':
			r = unicode.ToUpper(r)
		}
		upper = false
		b.WriteRune(r)
	}
	return fmt.Sprintf("; a gRPC answer is protojson, whose members are the fields' JSON names: %s", b.String())
}

// bodyMembers lists a JSON body's top-level members for an error.
func bodyMembers(doc any) string {
	if m, ok := doc.(map[string]any); !ok || len(m) == 0 {
		return " (not a JSON object with members)"
	}
	return jsonx.Members(doc)
}

// calibrateOp sends op's normal request under a fresh key and returns a
// one-line problem when the oracle did not count exactly one execution,
// or a note when the count changed kind (a downstream double whose calls
// hold no token counts globally: downstreamUntokened).
func calibrateOp(ctx context.Context, s *session, op *apispec.Operation) (problem, note string) {
	t := s.t
	ctx, cancel := context.WithTimeout(ctx, 2*t.Timeout+evidence.CalibrationWait)
	defer cancel()
	e := s.env(ctx, op)
	defer e.drain(ctx)
	k := e.NewKey()
	if err := e.keyError(); err != nil {
		return fmt.Sprintf("oracle check on %s: %v; effect-counting cases are inconclusive", op.Name, err), ""
	}
	before, err := e.Executions(ctx, k)
	if err != nil {
		return fmt.Sprintf("oracle check on %s: %v; effect-counting cases are inconclusive", op.Name, err), ""
	}
	untokened := s.double.Untokened(op)
	r := e.Send(ctx, Req{Label: "oracle check", Key: k})
	if !r.OK() {
		return fmt.Sprintf("oracle check on %s: the normal call answered %s, so the oracle could not be checked; effect-counting cases are inconclusive", op.Name, r.String()), ""
	}
	deadline := time.Now().Add(evidence.CalibrationWait)
	for {
		n, err := e.count(ctx, k, false) // polled here: not settled in count
		if err != nil {
			return fmt.Sprintf("oracle check on %s: %v; effect-counting cases are inconclusive", op.Name, err), ""
		}
		switch rise := n - before; {
		case rise == 1:
			s.double.Witness(op, k)
			return "", ""
		case rise == 0 && s.double.Untokened(op) > untokened:
			return s.double.Global(op, s.double.Untokened(op)-untokened)
		case rise > 1:
			return fmt.Sprintf("oracle check on %s: one request under a fresh key counted %d executions: the configured oracles overlap (two count the same execution), something else moves the counter, or one request executes %d times; effect-counting cases are inconclusive", op.Name, rise, rise), ""
		case time.Now().After(deadline) || ctx.Err() != nil:
			if o := t.OracleOf(op); o != nil && o.Downstream != "" {
				return s.double.Silent(op, r.Status) + "; effect-counting cases are inconclusive", ""
			}
			return fmt.Sprintf("oracle misconfigured: a %d answer to %s %s under a fresh key left the count unchanged within %s (check the oracle's url, pointer and principal); effect-counting cases are inconclusive", r.Status, op.Method, op.Path, evidence.CalibrationWait), ""
		}
		if clock.Until(ctx, time.Now().Add(50*time.Millisecond)) != nil {
			continue // the deadline case above reports it
		}
	}
}

// sentOps lists, in config order, the operations the runnable instances
// of ins send requests to (their own and their peers').
func sentOps(t *apispec.Target, ins []instance) []*apispec.Operation {
	used := map[string]bool{}
	for _, in := range ins {
		if in.Runnable() && in.op != nil {
			for _, op := range touched(t, in) {
				used[op.Name] = true
			}
		}
	}
	ops := []*apispec.Operation{}
	for i := range t.Operations {
		if used[t.Operations[i].Name] {
			ops = append(ops, &t.Operations[i])
		}
	}
	return ops
}
